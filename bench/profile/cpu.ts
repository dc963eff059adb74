/**
 * The CPU-only steps of UpdateRoutes, in-process and without iproute2, for
 * before/after comparisons of performance fixes: validateRoutes, parseRoutes
 * of `ip -json -details route show` output, planRoutes (empty -> N and
 * N -> N), renderRouteOps, routeToProto + encode. Medians of --runs.
 *
 *   bun bench/profile/cpu.ts [--n 10000] [--runs 7]
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { validateRoutes } from "../../src/agent/validate/validate-routes";
import { RoutesSchema, UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { parseRoutes } from "../../src/net/parse/parse-ip-json";
import { renderRouteOps } from "../../src/net/plan/render-batch";
import { planRoutes } from "../../src/net/plan/routes/plan-routes";
import { routeToProto } from "../../src/wire/kata-map";
import { DEV, dest, GATEWAY, updateRoutesPayload } from "../lib/route-set";
import { median } from "../lib/stats";

const argv = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? (argv[i + 1] as string) : d;
};
const n = Number(opt("--n", "10000"));
const runs = Number(opt("--runs", "7"));

// What iproute2 6.1 prints for these routes with -json -details.
const ipJson = JSON.stringify(
  Array.from({ length: n }, (_, i) => ({
    type: "unicast",
    dst: dest(i),
    gateway: GATEWAY,
    dev: DEV,
    protocol: "boot",
    scope: "global",
    flags: [],
  })),
);
const request = fromBinary(UpdateRoutesRequestSchema, updateRoutesPayload(n));
const protoRoutes = request.routes?.Routes ?? [];

// Inputs built once, so each step is timed alone.
const validated = validateRoutes(protoRoutes);
const parsed = parseRoutes(JSON.parse(ipJson), 4);
const pure: Record<string, () => unknown> = {
  validateRoutes: () => validateRoutes(protoRoutes),
  parseRoutes: () => parseRoutes(JSON.parse(ipJson), 4),
  "planRoutes empty->N": () => planRoutes([], validated),
  "planRoutes N->N": () => planRoutes(parsed, validated),
  renderRouteOps: () => renderRouteOps(planRoutes([], validated)),
  "encode answer": () =>
    toBinary(RoutesSchema, create(RoutesSchema, { Routes: parsed.map(routeToProto) })),
};
for (const [name, f] of Object.entries(pure)) {
  f();
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    f();
    ms.push(performance.now() - t0);
  }
  console.log(
    `${name.padEnd(22)} ${median(ms).toFixed(1).padStart(8)} ms  (min ${Math.min(...ms).toFixed(1)}, n ${n})`,
  );
}
