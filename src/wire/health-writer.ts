/**
 * grpc.HealthCheckResponse written by hand: the answer to Check, which a
 * shim sends again and again (its liveness probe). toBinary builds a
 * BinaryWriter, its chunk list and a copy for two bytes. Only an
 * enum value of 0-127 and no unknown fields are written here; anything
 * else returns undefined and the caller uses toBinary, whose bytes or error
 * stand. Where this answers, the bytes are toBinary's:
 * test/unit/health-writer.test.ts.
 */
import { HealthCheckResponseSchema } from "../gen/health_pb";

const TYPE = HealthCheckResponseSchema.typeName;
/**
 * The bytes for each status 0-127, made once (they are only read: the call
 * runner copies them into the frame). proto3 writes no default, so status
 * 0 (UNKNOWN) is the empty message; any other is field 1, wire type 0
 * (tag 0x08), then the one-byte varint.
 */
const BYTES: readonly Uint8Array[] = Array.from({ length: 0x80 }, (_, v) =>
  v === 0 ? new Uint8Array(0) : Uint8Array.of(0x08, v),
);

/** The bytes of a HealthCheckResponse, or undefined for toBinary to write. */
export function encodeHealthCheckResponse(message: { $typeName: string }): Uint8Array | undefined {
  if (message.$typeName !== TYPE || "$unknown" in message) return undefined;
  const status = (message as { status?: unknown }).status;
  if (typeof status !== "number" || !Number.isInteger(status) || status < 0 || status > 0x7f) {
    return undefined;
  }
  return BYTES[status];
}
