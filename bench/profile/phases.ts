/**
 * UpdateRoutes phase by phase, in-process, along the agent's own code path
 * (IpRunner in a bench netns, one-shot ip: no resident session): decode,
 * validate, read, plan, render, the change with its read-back (one ip),
 * encode the answer. Times each phase, so a slow row can be
 * attributed without guessing.
 *
 *   bun bench/profile/phases.ts [--n 10000] [--runs 3]
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { validateRoutes } from "../../src/agent/validate/validate-routes";
import { RoutesSchema, UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { IpRunner } from "../../src/net/iproute/ip-runner";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { renderRouteOps } from "../../src/net/plan/render-batch";
import { planRoutes } from "../../src/net/plan/routes/plan-routes";
import { MAX_REPEATED_ENTRIES } from "../../src/ttrpc/limits";
import { routeToProto } from "../../src/wire/kata-map";
import { decodeUpdateRoutesRequest } from "../../src/wire/routes-reader";
import { encodeRoutes } from "../../src/wire/routes-writer";
import { createBenchNetns, resetRoutes } from "../lib/bench-netns";
import { batchText, updateRoutesPayload } from "../lib/route-set";

type Request = ReturnType<typeof fromBinary<typeof UpdateRoutesRequestSchema>>;

const argv = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? (argv[i + 1] as string) : d;
};
const n = Number(opt("--n", "10000"));
const runs = Number(opt("--runs", "3"));

const ns = await createBenchNetns();
try {
  const ip = new IpRunner({ netns: ns.name });
  const payload = updateRoutesPayload(n);
  const req0 = () => fromBinary(UpdateRoutesRequestSchema, payload).routes?.Routes ?? [];
  for (let run = 0; run < runs * 2; run++) {
    const again = run % 2 === 1;
    if (!again) await resetRoutes(ns);
    const t: [string, number][] = [];
    let last = performance.now();
    const mark = (name: string) => {
      const now = performance.now();
      t.push([name, now - last]);
      last = now;
    };
    // As run-call.ts decodes and kata-network-service.ts handles it.
    const req = (decodeUpdateRoutesRequest(payload, MAX_REPEATED_ENTRIES) ??
      fromBinary(UpdateRoutesRequestSchema, payload)) as Request;
    mark("decode");
    const desired = validateRoutes(req.routes?.Routes ?? []);
    mark("validate");
    const state = await ip.readState();
    mark("readState");
    const ops = planRoutes(state.routes, desired, {
      kernel: impliedKernelRoutes(state.links),
      keepLinkless: true,
    });
    mark("plan");
    const lines = renderRouteOps(ops);
    mark("render");
    // The change and its read-back, one process.
    const routes = ops.length === 0 ? state.routes : await ip.batchThenRoutes(lines);
    mark("batch+read-back");
    const answer = create(RoutesSchema, { Routes: routes.map(routeToProto) });
    encodeRoutes(answer) ?? toBinary(RoutesSchema, answer);
    mark("encode");
    const total = t.reduce((a, [, ms]) => a + ms, 0);
    console.log(
      `${again ? "no change" : `${n} routes`}: total ${total.toFixed(0)} ms; ${t.map(([k, ms]) => `${k} ${ms.toFixed(0)}`).join(", ")}`,
    );
    if (!again) {
      await resetRoutes(ns);
      const t0 = performance.now();
      await ip.batch(batchText(n).trimEnd().split("\n"));
      console.log(`  floor (same batch via IpRunner): ${(performance.now() - t0).toFixed(0)} ms`);
      await resetRoutes(ns);
      await ip.batch(renderRouteOps(planRoutes([], validateRoutes(req0()))));
    }
  }
} finally {
  await ns.remove();
}
