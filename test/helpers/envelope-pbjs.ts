/**
 * An independent codec for the ttRPC envelope, built with protobufjs from
 * the message definitions of containerd/ttrpc `request.proto` and
 * google/rpc/status.proto written out here (not from our proto/ or the
 * generated code), so tests cross-check our encoding against a second
 * implementation.
 */
import protobuf from "protobufjs";

const root = protobuf.parse(`
  syntax = "proto3";
  package ttrpc;
  message Request {
    string service = 1;
    string method = 2;
    bytes payload = 3;
    int64 timeout_nano = 4;
    repeated KeyValue metadata = 5;
  }
  message Response { Status status = 1; bytes payload = 2; }
  message KeyValue { string key = 1; string value = 2; }
  // google.rpc.Status, wire-identical.
  message Status { int32 code = 1; string message = 2; }
`).root;

const RequestType = root.lookupType("ttrpc.Request");
const ResponseType = root.lookupType("ttrpc.Response");

export interface PbRequest {
  service: string;
  method: string;
  payload?: Uint8Array;
  /** Nanoseconds; bigint or number. */
  timeoutNano?: bigint | number;
  metadata?: { key: string; value: string }[];
}

export interface PbResponse {
  /** Absent when the Response carries no status field at all. */
  status: { code: number; message: string } | undefined;
  payload: Uint8Array;
}

/** Encodes a ttrpc.Request with protobufjs. */
export function pbEncodeRequest(req: PbRequest): Uint8Array {
  const msg = RequestType.fromObject({
    service: req.service,
    method: req.method,
    payload: req.payload ?? new Uint8Array(),
    timeoutNano: req.timeoutNano === undefined ? 0 : String(req.timeoutNano),
    metadata: req.metadata ?? [],
  });
  return RequestType.encode(msg).finish();
}

/** Decodes a ttrpc.Request with protobufjs (timeout as bigint). */
export function pbDecodeRequest(bytes: Uint8Array): Required<PbRequest> & { timeoutNano: bigint } {
  const o = RequestType.toObject(RequestType.decode(bytes), {
    longs: String,
    defaults: true,
    arrays: true,
  }) as {
    service: string;
    method: string;
    payload: Uint8Array;
    timeoutNano: string;
    metadata: { key: string; value: string }[];
  };
  return {
    service: o.service,
    method: o.method,
    payload: Uint8Array.from(o.payload),
    timeoutNano: BigInt(o.timeoutNano),
    metadata: o.metadata.map(({ key, value }) => ({ key, value })),
  };
}

/** Decodes a ttrpc.Response with protobufjs. */
export function pbDecodeResponse(bytes: Uint8Array): PbResponse {
  const decoded = ResponseType.decode(bytes) as unknown as {
    status?: { code?: number; message?: string };
    payload?: Uint8Array;
  };
  return {
    status:
      decoded.status === undefined || decoded.status === null
        ? undefined
        : { code: decoded.status.code ?? 0, message: decoded.status.message ?? "" },
    payload: Uint8Array.from(decoded.payload ?? []),
  };
}

/** Encodes a ttrpc.Response with protobufjs (for fake servers in client tests). */
export function pbEncodeResponse(res: {
  status?: { code: number; message: string };
  payload?: Uint8Array;
}): Uint8Array {
  const obj: Record<string, unknown> = { payload: res.payload ?? new Uint8Array() };
  if (res.status) obj.status = res.status;
  return ResponseType.encode(ResponseType.fromObject(obj)).finish();
}
