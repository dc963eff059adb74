/**
 * Route metrics as `ip route` spells them (RTAX_*): a few per route, some
 * locked (`mtu lock 1400`), values inside what the kernel accepts.
 */
import type { Prng } from "./prng";

type Metric = [name: string, value: (rng: Prng, family: 4 | 6) => string, lockable: boolean];

const METRICS: Metric[] = [
  ["mtu", (r, f) => String(r.int(f === 6 ? 1280 : 576, 1500)), true],
  ["advmss", (r) => String(r.int(500, 1460)), true],
  ["window", (r) => String(r.int(1000, 65535)), true],
  ["rtt", (r) => `${r.int(10, 500)}ms`, true],
  ["rttvar", (r) => `${r.int(5, 100)}ms`, true],
  ["ssthresh", (r) => String(r.int(2, 100)), true],
  ["cwnd", (r) => String(r.int(2, 100)), true],
  ["initcwnd", (r) => String(r.int(1, 100)), true],
  ["initrwnd", (r) => String(r.int(1, 100)), true],
  ["quickack", (r) => String(r.int(0, 1)), false],
  ["hoplimit", (r) => String(r.int(1, 255)), true],
  ["reordering", (r) => String(r.int(3, 127)), true],
  ["features", () => "ecn", false],
  ["congctl", (r) => r.pick(["reno", "cubic"]), true],
  ["fastopen_no_cookie", (r) => String(r.int(0, 1)), false],
];

/** Appends 1-4 metrics to `opts` and their vocabulary items to `tags`. */
export function genMetrics(rng: Prng, family: 4 | 6, tags: string[], opts: string[]): void {
  for (const [name, value, lockable] of rng.shuffle(METRICS).slice(0, rng.int(1, 4))) {
    const lock = lockable && rng.chance(0.2);
    tags.push(`route ${name}`, ...(lock ? [`route ${name} lock`] : []));
    opts.push(name, ...(lock ? ["lock"] : []), value(rng, family));
  }
}
