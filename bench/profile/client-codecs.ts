/**
 * The host's side of row 12's Apply in-process: protobuf-es against the
 * hand-written codecs AgentClient.unary uses (src/wire/fast-codecs.ts),
 * for the request's encode and the answer's decode of a row-12-like
 * state (test/support/large-state.ts), interleaved A B / B A, wall ms,
 * medians and the median of the per-pair ratios (fast / protobuf-es).
 *
 *   bun bench/profile/client-codecs.ts [--pairs 31]
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ApplyRequestSchema, ApplyResponseSchema } from "../../src/gen/network_pb";
import { decodeApplyResponse } from "../../src/wire/state-reader";
import { encodeApplyRequest } from "../../src/wire/state-writer";
import { largeStateAsRead, largeStatePlan } from "../../test/support/large-state";
import { option } from "../lib/args";
import { median } from "../lib/stats";

const pairs = Number(option("--pairs", "31"));
const desired = largeStateAsRead();
const request = create(ApplyRequestSchema, { desired, exact: true });
const answer = toBinary(
  ApplyResponseSchema,
  create(ApplyResponseSchema, { result: desired, plan: largeStatePlan(desired) }),
);

const ms = (f: () => unknown) => {
  const t = performance.now();
  if (f() === undefined) throw new Error("the fast codec declined");
  return performance.now() - t;
};

function ab(name: string, slow: () => unknown, fast: () => unknown): void {
  for (let i = 0; i < 20; i++) ms(slow) + ms(fast); // past the JIT's warm-up
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < pairs; i++) {
    if (i % 2 === 0) {
      a.push(ms(slow));
      b.push(ms(fast));
    } else {
      b.push(ms(fast));
      a.push(ms(slow));
    }
  }
  const ratio = median(b.map((x, i) => x / (a[i] as number)));
  console.log(
    `${name}: protobuf-es ${median(a).toFixed(1)} ms, fast ${median(b).toFixed(1)} ms, ratio ${ratio.toFixed(2)}`,
  );
}

console.log(
  `request ${toBinary(ApplyRequestSchema, request).length} bytes, answer ${answer.length}`,
);
ab(
  "encode ApplyRequest",
  () => toBinary(ApplyRequestSchema, request),
  () => encodeApplyRequest(request),
);
ab(
  "decode ApplyResponse",
  () => fromBinary(ApplyResponseSchema, answer),
  () => decodeApplyResponse(answer),
);
