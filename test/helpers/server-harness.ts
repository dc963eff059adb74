/**
 * A ServerConnection over the Health service for the unit tests, pure:
 * bytes in through receive(), every frame it writes decoded with protobufjs
 * (test/helpers/envelope-pbjs.ts), independently of our generated code,
 * and checked to be one whole frame per write.
 */
import { expect } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../src/gen/health_pb";
import { type DecodedFrame, encodeFrame, FrameDecoder, FrameType } from "../../src/ttrpc/frame";
import { ServerConnection } from "../../src/ttrpc/server-connection";
import { type ServiceImpl, ServiceRegistry } from "../../src/ttrpc/service";
import { type PbRequest, pbDecodeResponse, pbEncodeRequest } from "../helpers/envelope-pbjs";
import { waitFor } from "../helpers/wait";

export const SERVING = { status: HealthCheckResponse_ServingStatus.SERVING };

export interface Answer {
  streamId: number;
  type: number;
  flags: number;
  code: number | undefined;
  message: string | undefined;
  payload: Uint8Array;
  raw: Uint8Array;
}

/** A connection over the Health service with `impl`, recording what it writes. */
export function harness(impl: ServiceImpl<typeof Health> = { check: () => SERVING }) {
  const decoder = new FrameDecoder();
  const answers: Answer[] = [];
  const writes: Uint8Array[] = [];
  const conn = new ServerConnection({
    registry: new ServiceRegistry().register(Health, impl),
    write: (bytes) => {
      writes.push(bytes);
      // Each write must be exactly one whole frame.
      const frames = decoder.push(bytes);
      expect(frames).toHaveLength(1);
      expect(decoder.pending).toBe(false);
      const f = frames[0] as DecodedFrame & { kind: "frame" };
      const res = pbDecodeResponse(f.data);
      answers.push({
        streamId: f.streamId,
        type: f.type,
        flags: f.flags,
        code: res.status?.code,
        message: res.status?.message,
        payload: res.payload,
        raw: f.data,
      });
    },
  });
  const request = (streamId: number, req: Partial<PbRequest> = {}) =>
    encodeFrame(
      streamId,
      FrameType.Request,
      0,
      pbEncodeRequest({ service: "grpc.Health", method: "Check", ...req }),
    );
  return {
    conn,
    answers,
    writes,
    request,
    send(streamId: number, req: Partial<PbRequest> = {}) {
      conn.receive(request(streamId, req));
    },
    /** Waits until `n` answers have been written. */
    until: (n: number) =>
      waitFor(() => answers.length >= n, { intervalMs: 1, what: `${n} answers` }),
    byStream: (id: number) => answers.find((a) => a.streamId === id),
  };
}

export function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
