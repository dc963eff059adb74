/**
 * The call runner's decode of an N-route UpdateRoutes request two ways,
 * interleaved A B / B A, CPU ms (process.cpuUsage): countRepeated then the
 * hand-written reader (before), the reader with the entry limit and no
 * count (after: run-call.ts since the reader takes the limit).
 *
 *   bun bench/profile/decode-count-ab.ts [--n 10000] [--pairs 31]
 */
import { UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { countRepeated } from "../../src/ttrpc/count-repeated";
import { MAX_REPEATED_ENTRIES } from "../../src/ttrpc/limits";
import { decodeUpdateRoutesRequest } from "../../src/wire/routes-reader";
import { updateRoutesPayload } from "../lib/route-set";
import { median } from "../lib/stats";

const argv = process.argv.slice(2);
const opt = (k: string, d: string) => {
  const i = argv.indexOf(k);
  return i >= 0 ? (argv[i + 1] as string) : d;
};
const payload = updateRoutesPayload(Number(opt("--n", "10000")));
const pairs = Number(opt("--pairs", "31"));
const cpu = (f: () => unknown) => {
  const c = process.cpuUsage();
  f();
  const d = process.cpuUsage(c);
  return (d.user + d.system) / 1000;
};
const counted = () => {
  countRepeated(UpdateRoutesRequestSchema, payload, MAX_REPEATED_ENTRIES);
  return decodeUpdateRoutesRequest(payload);
};
const limited = () => decodeUpdateRoutesRequest(payload, MAX_REPEATED_ENTRIES);
const a: number[] = [];
const b: number[] = [];
for (let i = 0; i < 5; i++) counted() && limited();
for (let i = 0; i < pairs; i++) {
  if (i % 2) {
    a.push(cpu(counted));
    b.push(cpu(limited));
  } else {
    b.push(cpu(limited));
    a.push(cpu(counted));
  }
}
const ratio = median(b.map((x, i) => x / (a[i] as number)));
console.log(
  `count + read ${median(a).toFixed(2)} ms, read with the limit ${median(b).toFixed(2)} ms, ratio ${ratio.toFixed(2)}`,
);
