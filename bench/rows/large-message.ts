/**
 * Row 7: a ~4 MiB UpdateRoutes request, decoded and validated in-process
 * along the agent's own path: FrameDecoder fed 64 KiB chunks (as a socket
 * delivers them), the ttRPC Request envelope, grpc.UpdateRoutesRequest
 * (@bufbuild/protobuf), then validateRoutes. The protobuf decode alone is
 * compared with protobufjs decoding the same bytes (a second JS decoder,
 * schema written out here), interleaved.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import protobuf from "protobufjs";
import { validateRoutes } from "../../src/agent/validate/validate-routes";
import { UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { RequestSchema } from "../../src/gen/ttrpc_pb";
import { encodeFrame, FrameDecoder, FrameType, MAX_DATA_LENGTH } from "../../src/ttrpc/frame";
import type { Row } from "../lib/row";
import { median, summarize } from "../lib/stats";

const pbRoutes = protobuf
  .parse(`
  syntax = "proto3";
  message Route {
    string dest = 1; string gateway = 2; string device = 3; string source = 4;
    uint32 scope = 5; int32 family = 6; uint32 flags = 7; uint32 mtu = 8;
  }
  message Routes { repeated Route Routes = 1; }
  message UpdateRoutesRequest { Routes routes = 1; }
`)
  .root.lookupType("UpdateRoutesRequest");

/** Route i: a /32 in 172.16.0.0/12 via 10.0.0.1 on eth0 with a source (up to ~1M). */
function route(i: number) {
  return {
    dest: `172.${16 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32`,
    gateway: "10.0.0.1",
    device: "eth0",
    source: "10.0.0.2",
  };
}

/** The largest request of such routes whose frame stays under the 4 MiB limit. */
function bigRequest(): { payload: Uint8Array; frame: Uint8Array; routes: number } {
  const perRoute = toBinary(
    UpdateRoutesRequestSchema,
    create(UpdateRoutesRequestSchema, { routes: { Routes: [route(70_000)] } }),
  ).length;
  const n = Math.floor((MAX_DATA_LENGTH - 1024) / perRoute);
  const req = create(UpdateRoutesRequestSchema, {
    routes: { Routes: Array.from({ length: n }, (_, i) => route(i)) },
  });
  const payload = toBinary(UpdateRoutesRequestSchema, req);
  const envelope = toBinary(
    RequestSchema,
    create(RequestSchema, {
      service: "grpc.AgentService",
      method: "UpdateRoutes",
      payload,
      timeoutNano: 30_000_000_000n,
    }),
  );
  return { payload, frame: encodeFrame(1, FrameType.Request, 0, envelope), routes: n };
}

function ours(frame: Uint8Array, expectRoutes: number) {
  const t0 = performance.now();
  const dec = new FrameDecoder();
  let data: Uint8Array | undefined;
  for (let pos = 0; pos < frame.length; pos += 65_536) {
    for (const f of dec.push(frame.subarray(pos, pos + 65_536))) {
      if (f.kind === "frame") data = f.data;
    }
  }
  if (!data) throw new Error("no frame decoded");
  const t1 = performance.now();
  const env = fromBinary(RequestSchema, data);
  const t2 = performance.now();
  const req = fromBinary(UpdateRoutesRequestSchema, env.payload);
  const t3 = performance.now();
  const routes = validateRoutes(req.routes?.Routes ?? []);
  const t4 = performance.now();
  if (routes.length !== expectRoutes) throw new Error(`validated ${routes.length} routes`);
  return { frame: t1 - t0, envelope: t2 - t1, decode: t3 - t2, validate: t4 - t3, total: t4 - t0 };
}

function pbjs(payload: Uint8Array): number {
  const t0 = performance.now();
  const m = pbRoutes.decode(payload) as unknown as { routes: { Routes: unknown[] } };
  const ms = performance.now() - t0;
  if (m.routes.Routes.length === 0) throw new Error("protobufjs decoded nothing");
  return ms;
}

export function largeMessageRows(pairs: number): Row[] {
  const { payload, frame, routes } = bigRequest();
  ours(frame, routes);
  pbjs(payload);
  const runs: ReturnType<typeof ours>[] = [];
  const ref: number[] = [];
  for (let i = 0; i < pairs; i++) {
    if (i % 2 === 0) {
      runs.push(ours(frame, routes));
      ref.push(pbjs(payload));
    } else {
      ref.push(pbjs(payload));
      runs.push(ours(frame, routes));
    }
  }
  const decode = runs.map((r) => r.decode);
  const total = runs.map((r) => r.total);
  const ratios = decode.map((x, i) => x / (ref[i] as number));
  const stage = (k: keyof (typeof runs)[number]) => median(runs.map((r) => r[k])).toFixed(1);
  const size = `${(frame.length / 1048576).toFixed(2)} MiB frame, ${routes.toLocaleString("en")} routes`;
  const cmd = `bun bench/run.ts --rows 7 --pairs ${pairs}`;
  return [
    {
      id: "7",
      what: `UpdateRoutesRequest protobuf decode (${size})`,
      unit: "ms",
      ours: median(decode),
      reference: median(ref),
      referenceWhat: "protobufjs decode",
      ratio: median(ratios),
      ratioNote: "median of per-pair ratios",
      oursStats: summarize(decode),
      referenceStats: summarize(ref),
      ratioStats: summarize(ratios),
      commands: [cmd],
    },
    {
      id: "7",
      what: `frame + envelope + decode + validateRoutes (${size})`,
      unit: "ms",
      ours: median(total),
      oursStats: summarize(total),
      notes: [
        `median per stage (ms): frame ${stage("frame")}, envelope ${stage("envelope")}, decode ${stage("decode")}, validate ${stage("validate")}`,
      ],
      commands: [cmd],
    },
  ];
}
