/**
 * planApply in-process on row 12's state: the two plans an
 * exact Apply of it makes. "first": the guest as the row's reset leaves it
 * (tables, rules and objects flushed) to the whole state, 10,000 adds;
 * "again": the state read back against itself (the convergence check, no
 * change). The states are real reads: a netns with two veth NICs gets
 * test/support/large-state.ts `largeState()` by planApply's own batch, is read
 * (IpRunner.readFullState, the parsers' shape), and that read as Get
 * answers it (stateToWire) validated (validateApply) is the desired side;
 * then the row's flush and a read give the "first" current side. Sysctls
 * are left out (the in-process read cannot enter the netns's /proc/sys).
 *
 *   bun bench/profile/plan-apply.ts [--rounds 41] [--base DIR]
 *   bun --cpu-prof-md bench/profile/plan-apply.ts --rounds 60
 *
 * --base DIR: another tree (e.g. `git archive main src | tar -x -C DIR`) whose
 * src/net/plan-apply.ts is timed as A against this tree's as B, on the same
 * state objects, alternating A B / B A; each side's plans are checked equal
 * to this tree's (JSON) once. --fixture FILE keeps the states read (made
 * when missing); --side A|B and --case first|again time one of each;
 * --perf-ctl FIFO brackets the timed rounds for `perf stat --control`.
 */

import { dlopen, FFIType, ptr } from "bun:ffi";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { create } from "@bufbuild/protobuf";
import { validateApply } from "../../src/agent/validate/validate-state";
import { ApplyRequestSchema } from "../../src/gen/network_pb";
import { IpRunner } from "../../src/net/iproute/ip-runner";
import type { FullState } from "../../src/net/model/full-state";
import { planApply } from "../../src/net/plan/plan-apply";
import { stateToWire } from "../../src/wire/state-map";
import { Netns } from "../../test/helpers/netns";
import { addVeth, randomMac } from "../../test/host/helpers";
import { largeState } from "../../test/support/large-state";
import { flag, option } from "../lib/args";
import { median } from "../lib/stats";
import { timeIp } from "../rows/update-routes";

type Plan = typeof planApply;

const rounds = Number(option("--rounds", "41"));
const base = option("--base", "");

async function batch(ns: Netns, lines: readonly string[], force = false): Promise<void> {
  const args = ["-n", ns.name, ...(force ? ["-force"] : []), "-batch", "-"];
  const done = timeIp(args, `${lines.join("\n")}\n`);
  await (force ? done.catch(() => undefined) : done);
}

/** The two states the row's Apply plans between, read from a real netns. */
async function states() {
  const ns = await Netns.create("npa");
  try {
    await addVeth(ns, "eth0", randomMac());
    await addVeth(ns, "eth1", randomMac());
    const ip = new IpRunner({ netns: ns.name });
    const read = async (): Promise<FullState> => ({
      ...(await ip.readFullState()),
      sysctls: new Map(),
    });
    const macs = (await read()).links.filter((l) => l.name.startsWith("eth")).map((l) => l.mac);
    const first = validateApply(create(ApplyRequestSchema, { desired: largeState(macs) }));
    const p = planApply(await read(), first, { exact: false });
    if (p.batch6First.length || p.batch6.length || p.sysctls.length)
      throw new Error("the first Apply needs more than one ip -batch");
    await batch(ns, p.batch);
    const full = await read();
    const desired = validateApply(
      create(ApplyRequestSchema, { desired: stateToWire({ ...full, sysctls: [] }), exact: true }),
    );
    const tables = [254, 100, 200, 300].map((t) => `route flush table ${t}`);
    const rules = Array.from({ length: 100 }, (_, i) => `rule del priority ${1000 + i}`);
    await batch(ns, ["nexthop flush", ...tables, ...rules], true);
    return { empty: await read(), full, desired };
  } finally {
    await ns.remove();
  }
}

async function load(dir: string): Promise<Plan> {
  // Trees before the layout move kept src/net flat.
  const at = ["src/net/plan/plan-apply.ts", "src/net/plan-apply.ts"].find((p) =>
    existsSync(join(resolve(dir), p)),
  );
  const m = (await import(join(resolve(dir), at ?? "src/net/plan/plan-apply.ts"))) as {
    planApply: Plan;
  };
  return m.planApply;
}

type States = Awaited<ReturnType<typeof states>>;
/** The states, from `--fixture FILE` when it exists (else read, and written there). */
async function fixture(file: string): Promise<States> {
  if (file === "" || !existsSync(file)) {
    const got = await states();
    if (file !== "") writeFileSync(file, JSON.stringify(got, setsAsArrays));
    return got;
  }
  const s = JSON.parse(readFileSync(file, "utf8")) as States;
  const withMap = (f: FullState) => ({ ...f, sysctls: new Map(f.sysctls) });
  return { empty: withMap(s.empty), full: withMap(s.full), desired: s.desired };
}

const { empty, full, desired } = await fixture(option("--fixture", ""));
const cases = {
  first: () => [empty, desired] as const,
  again: () => [full, desired] as const,
};
const only = option("--side", "");
const sides: { name: string; plan: Plan }[] = (
  base
    ? [
        { name: "A (base)", plan: await load(base) },
        { name: "B (this tree)", plan: planApply },
      ]
    : [{ name: "this tree", plan: planApply }]
).filter((s) => only === "" || s.name.startsWith(only));

for (const [what, args] of Object.entries(cases)) {
  const [current, want] = args();
  const expected = JSON.stringify(planApply(current, want, { exact: true }), setsAsArrays);
  for (const s of sides) {
    if (JSON.stringify(s.plan(current, want, { exact: true }), setsAsArrays) !== expected)
      throw new Error(`${s.name}: the ${what} plan differs from this tree's`);
  }
}
const first = planApply(empty, desired, { exact: true });
const again = planApply(full, desired, { exact: true });
console.log(
  `${desired.routes.length} routes, ${desired.rules.length} rules, ${desired.nexthops.length} nexthop objects; ` +
    `first plan ${first.batch.length} lines, again ${again.batch.length}`,
);
if (again.batch.length !== 0) console.log("note: the plan against the read-back is not empty");

/**
 * The main thread's CPU time so far, ms: clock_gettime(CLOCK_THREAD_CPUTIME_ID)
 * through bun:ffi (getrusage's per-thread figures move in scheduler ticks).
 */
const libc = dlopen("libc.so.6", {
  clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
});
const timespec = new BigInt64Array(2);
const CLOCK_THREAD_CPUTIME_ID = 3;
const onCpuMs = () => {
  libc.symbols.clock_gettime(CLOCK_THREAD_CPUTIME_ID, ptr(timespec));
  return Number(timespec[0]) * 1e3 + Number(timespec[1]) / 1e6;
};

// Wall time and the main thread's CPU time (its share of the collector's
// work included) per call: on a shared machine the CPU time is the steadier.
const times = new Map<string, { wall: number[]; cpu: number[] }>();
const time = (side: { name: string; plan: Plan }, what: keyof typeof cases) => {
  const [current, want] = cases[what]();
  const c0 = onCpuMs();
  const t0 = performance.now();
  side.plan(current, want, { exact: true });
  const ms = performance.now() - t0;
  const c = onCpuMs() - c0;
  const k = `${what} ${side.name}`;
  const entry = times.get(k) ?? { wall: [], cpu: [] };
  entry.wall.push(ms);
  entry.cpu.push(c);
  times.set(k, entry);
};
// --perf-ctl FIFO: `perf stat --control fifo:FIFO -D -1` counts the timed rounds only.
const ctl = option("--perf-ctl", "");
const whats = (["first", "again"] as const).filter((w) => [w, ""].includes(option("--case", "")));
if (ctl) writeFileSync(ctl, "enable\n");
for (let i = 0; i < rounds; i++) {
  const order = i % 2 === 0 ? sides : [...sides].reverse();
  for (const what of whats) for (const s of order) time(s, what);
}
if (ctl) writeFileSync(ctl, "disable\n");
const warm = Math.min(5, rounds >> 2);
const fmt = (x: number) => x.toFixed(1);
for (const [k, { wall, cpu }] of times) {
  const w = wall.slice(warm);
  const c = cpu.slice(warm);
  console.log(
    `${k}: median ${fmt(median(w))} ms wall (min ${fmt(Math.min(...w))}), ${fmt(median(c))} ms CPU, over ${w.length} rounds after ${warm}; round 1 ${fmt(wall[0] as number)} ms`,
  );
}
if (base) {
  for (const what of ["first", "again"]) {
    for (const m of ["wall", "cpu"] as const) {
      const a = times.get(`${what} A (base)`)?.[m].slice(warm) ?? [];
      const b = times.get(`${what} B (this tree)`)?.[m].slice(warm) ?? [];
      const ratios = a.map((x, i) => x / (b[i] as number));
      console.log(`${what}: A/B ${m}, median of per-round ratios ${median(ratios).toFixed(2)}`);
    }
  }
}
if (flag("--raw")) for (const [k, xs] of times) console.log(k, xs.wall.map(fmt).join(" "));

function setsAsArrays(_k: string, v: unknown): unknown {
  if (v instanceof Set) return [...v];
  if (v instanceof Map) return [...v];
  return v;
}
