/**
 * UpdateRoutes phase by phase, in-process, along the agent's own code path
 * (IpRunner in a bench netns): decode, validate, read, plan, render, apply,
 * read back, encode the answer. Times each phase, so a slow row can be
 * attributed without guessing.
 *
 *   bun bench/profile/phases.ts [--n 10000] [--runs 3]
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { validateRoutes } from "../../src/agent/validate";
import { RoutesSchema, UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { IpRunner } from "../../src/net/ip-runner";
import { impliedKernelRoutes } from "../../src/net/kernel-routes";
import { planRoutes } from "../../src/net/plan-routes";
import { renderRouteOps } from "../../src/net/render-batch";
import { routeToProto } from "../../src/wire/kata-map";
import { createBenchNetns, resetRoutes } from "../lib/bench-netns";
import { batchText, updateRoutesPayload } from "../lib/route-set";

const argv = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? (argv[i + 1] as string) : d;
};
const n = Number(opt("--n", "10000"));
const runs = Number(opt("--runs", "3"));

const ns = await createBenchNetns();
try {
  const ip = new IpRunner("ip", ns.name);
  const payload = updateRoutesPayload(n);
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
    const req = fromBinary(UpdateRoutesRequestSchema, payload);
    mark("decode");
    const desired = validateRoutes(req.routes?.Routes ?? []);
    mark("validate");
    const state = await ip.readState();
    mark("readState");
    const ops = planRoutes(state.routes, desired, { kernel: impliedKernelRoutes(state.links) });
    mark("plan");
    const lines = renderRouteOps(ops);
    mark("render");
    await ip.batch(lines);
    mark("batch");
    const routes = await ip.readRoutes();
    mark("readRoutes");
    toBinary(RoutesSchema, create(RoutesSchema, { Routes: routes.map(routeToProto) }));
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
      await ip.batch(lines);
    }
  }
} finally {
  await ns.remove();
}
