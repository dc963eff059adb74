/**
 * Before/after for the CPU-only steps of UpdateRoutes (no iproute2): the
 * source at git ref `--old` (extracted with git archive) against the working
 * tree, in one process, steps interleaved A B / B A; reports the median CPU
 * time (process.cpuUsage, user + system) of each side and the median of the
 * per-pair ratios new/old. With `--cold`, every run is a fresh process doing
 * each step once, in the agent's order, each on the previous steps' output
 * (a fresh agent's first call: nothing compiled or run before), old and new
 * processes alternating; "all" is then the sum of the steps.
 *
 *   bun bench/profile/compare-cpu.ts --old REF [--n 10000] [--pairs 15] [--cold] [--steps a,b]
 *
 * Steps: decode, validate, parse, plan0 (empty -> N), planN (N -> N, no
 * change), render, encode, and all (the chain of a change and of a no-change call).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { BUN, ROOT } from "../lib/proc";
import { DEV, dest, GATEWAY, updateRoutesPayload } from "../lib/route-set";
import { median } from "../lib/stats";

const argv = process.argv.slice(2);
const opt = (k: string, d?: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? argv[i + 1] : d;
};
const n = Number(opt("--n", "10000"));
const pairs = Number(opt("--pairs", "15"));
const cold = argv.includes("--cold");
const ALL = ["decode", "validate", "parse", "plan0", "planN", "render", "encode", "all"];
const steps = opt("--steps")?.split(",") ?? ALL;

type Step = () => unknown;
type Steps = Record<string, Step>;

/** The step functions of the source tree at `root` (its src/ and node_modules). */
async function load(root: string, firstRuns = false): Promise<Steps> {
  const pb = await import(join(ROOT, "node_modules/@bufbuild/protobuf/dist/esm/index.js"));
  const agentPb = await import(join(root, "src/gen/agent_pb.ts"));
  // Where the tree has them: older trees kept src/ flat, and re-exported
  // both from these modules.
  const first = (...paths: string[]) =>
    join(root, paths.find((p) => existsSync(join(root, p))) ?? (paths.at(-1) as string));
  const { validateRoutes } = await import(
    first(
      "src/agent/validate/validate-routes.ts",
      "src/agent/validate-routes.ts",
      "src/agent/validate.ts",
    )
  );
  const { parseRoutes } = await import(
    first("src/net/parse/parse-ip-json.ts", "src/net/parse-ip-json.ts")
  );
  const { splitJsonDocuments } = await import(
    first(
      "src/net/parse/json-documents.ts",
      "src/net/json-documents.ts",
      "src/net/parse-ip-json.ts",
    )
  );
  const { planRoutes } = await import(
    first("src/net/plan/routes/plan-routes.ts", "src/net/plan-routes.ts")
  );
  const { renderRouteOps } = await import(
    first("src/net/plan/render-batch.ts", "src/net/render-batch.ts")
  );
  const { routeToProto } = await import(join(root, "src/wire/kata-map.ts"));
  const payload = updateRoutesPayload(n);
  // What iproute2 6.1 prints for the table after the change, with -json -details.
  const ipText = `${JSON.stringify([
    {
      type: "unicast",
      dst: "10.0.0.0/24",
      dev: DEV,
      protocol: "kernel",
      scope: "link",
      prefsrc: "10.0.0.2",
      flags: [],
    },
    ...Array.from({ length: n }, (_, i) => ({
      type: "unicast",
      dst: dest(i),
      gateway: GATEWAY,
      dev: DEV,
      protocol: "boot",
      scope: "global",
      flags: [],
    })),
  ])}\n`;
  // The call runner's own reader and writer where the tree has them (run-call.ts).
  const codec = existsSync(join(root, "src/wire/routes-reader.ts"))
    ? await import(join(root, "src/wire/routes-reader.ts"))
    : undefined;
  const decode = () =>
    codec?.decodeUpdateRoutesRequest(payload) ??
    pb.fromBinary(agentPb.UpdateRoutesRequestSchema, payload);
  const parse = () => parseRoutes(splitJsonDocuments(ipText)[0]);
  const encode = (routes: unknown[]) => {
    const message = pb.create(agentPb.RoutesSchema, { Routes: routes.map(routeToProto) });
    return codec?.encodeRoutes(message) ?? pb.toBinary(agentPb.RoutesSchema, message);
  };
  if (firstRuns) {
    // A fresh process: every step's input comes from the step before.
    let request: { routes: { Routes: unknown[] } };
    let want: unknown[] = [];
    let now: unknown[] = [];
    let planned: unknown[] = [];
    return {
      decode: () => {
        request = decode();
      },
      validate: () => {
        want = validateRoutes(request.routes.Routes);
      },
      parse: () => {
        now = parse();
      },
      plan0: () => {
        planned = planRoutes(now.slice(0, 1), want, { keepLinkless: true });
      },
      planN: () => planRoutes(now, want, { keepLinkless: true }),
      render: () => renderRouteOps(planned),
      encode: () => encode(now),
    };
  }
  const protoRoutes = decode().routes.Routes;
  const desired = validateRoutes(protoRoutes);
  const current = parse();
  const kernelOnly = current.slice(0, 1);
  const plan0 = () => planRoutes(kernelOnly, desired, { keepLinkless: true });
  const ops = plan0();
  return {
    decode,
    validate: () => validateRoutes(protoRoutes),
    parse,
    plan0,
    planN: () => planRoutes(current, desired, { keepLinkless: true }),
    render: () => renderRouteOps(ops),
    encode: () => encode(current),
    all: () => {
      // A change (read, plan, render, read back, answer) and a no-change call.
      for (const before of [kernelOnly, null]) {
        const want = validateRoutes(decode().routes.Routes);
        const now = before ?? parse();
        const planned = planRoutes(now, want, { keepLinkless: true });
        if (planned.length) renderRouteOps(planned);
        encode(planned.length ? parse() : now);
      }
    },
  };
}

function cpuMs(f: Step): number {
  const c0 = process.cpuUsage();
  f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

/** A fresh git-archive of `ref` under /tmp, node_modules shared. */
function extract(ref: string): string {
  const sha = execFileSync("git", ["-C", ROOT, "rev-parse", ref], { encoding: "utf8" }).trim();
  const dir = `/tmp/netagent-compare-cpu-${sha.slice(0, 12)}`;
  if (!existsSync(join(dir, "src"))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    execFileSync("sh", ["-c", `git -C '${ROOT}' archive ${sha} src | tar -x -C '${dir}'`]);
    // Generated code is not in git: the old tree uses the working tree's.
    if (!existsSync(join(dir, "src/gen"))) symlinkSync(join(ROOT, "src/gen"), join(dir, "src/gen"));
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  }
  return dir;
}

const child = opt("--child");
if (child !== undefined) {
  // One cold pass, each step's first run in the agent's order (each step's
  // input is the previous steps' output, so nothing ran before it is
  // timed), CPU ms as JSON on stdout; "all" is their sum.
  const s = await load(child, true);
  const out: Record<string, number> = {};
  for (const k of ALL.slice(0, -1)) out[k] = cpuMs(s[k] as Step);
  out.all = Object.values(out).reduce((a, b) => a + b, 0);
  console.log(JSON.stringify(out));
  process.exit(0);
}

const oldRoot = extract(opt("--old") ?? "main");
const sides = { old: oldRoot, new: ROOT };
const times: Record<"old" | "new", Record<string, number[]>> = { old: {}, new: {} };
for (const side of ["old", "new"] as const) for (const k of steps) times[side][k] = [];
const record = (side: "old" | "new", r: Record<string, number>) => {
  for (const k of steps) times[side][k]?.push(r[k] as number);
};

if (cold) {
  const run = (side: "old" | "new") => {
    const r = spawnSync(
      BUN,
      [import.meta.path, "--child", sides[side], "--n", String(n), "--steps", steps.join(",")],
      { encoding: "utf8" },
    );
    if (r.status !== 0) throw new Error(`${side}: ${r.stderr}`);
    record(side, JSON.parse(r.stdout));
  };
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 === 0 ? (["old", "new"] as const) : (["new", "old"] as const);
    for (const side of order) run(side);
  }
} else {
  const loaded = { old: await load(sides.old), new: await load(sides.new) };
  for (const side of ["old", "new"] as const) for (const k of steps) loaded[side][k]?.(); // warm
  for (let i = 0; i < pairs; i++) {
    for (const k of steps) {
      const order = i % 2 === 0 ? (["old", "new"] as const) : (["new", "old"] as const);
      for (const side of order) times[side][k]?.push(cpuMs(loaded[side][k] as Step));
    }
  }
}

console.log(
  `${cold ? "cold (fresh process per run)" : "warm"}, n ${n}, ${pairs} pairs, old ${opt("--old") ?? "main"}; CPU ms, medians`,
);
for (const k of steps) {
  const a = times.old[k] as number[];
  const b = times.new[k] as number[];
  const ratios = a.map((x, i) => (b[i] as number) / x);
  console.log(
    `${k.padEnd(9)} old ${median(a).toFixed(1).padStart(7)}  new ${median(b).toFixed(1).padStart(7)}  new/old ${median(ratios).toFixed(2)}`,
  );
}
