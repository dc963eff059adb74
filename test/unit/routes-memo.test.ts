/**
 * NoChangeMemo: a repeat is known by its request's bytes and by the very
 * table (the same parsed objects) it was planned on; the kept answer is
 * frozen and encoded once.
 */
import { create, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { NoChangeMemo } from "../../src/agent/services/routes-memo";
import { RoutesSchema } from "../../src/gen/agent_pb";
import { KEPT_TABLE_MAX_ROUTES } from "../../src/net/iproute/ip-runner";
import type { Route } from "../../src/net/model/model";
import { FAST_ENCODERS } from "../../src/wire/fast-codecs";

const table: Route[] = [];
const desired: Route[] = [];
const answer = () =>
  create(RoutesSchema, { Routes: [{ dest: "10.0.0.0/8", gateway: "10.1.1.1", device: "eth0" }] });

describe("NoChangeMemo", () => {
  it("knows a repeat by its bytes, and only with the table it was planned on", () => {
    const memo = new NoChangeMemo();
    const bytes = new Uint8Array([1, 2, 3, 4]);
    expect(memo.desiredFor(bytes)).toBeUndefined();
    const kept = memo.keep(bytes, desired, table, answer());
    expect(memo.desiredFor(new Uint8Array([1, 2, 3, 4]))).toBe(desired);
    expect(memo.desiredFor(new Uint8Array([1, 2, 3, 5]))).toBeUndefined();
    expect(memo.desiredFor(new Uint8Array([1, 2, 3]))).toBeUndefined();
    expect(memo.desiredFor(undefined)).toBeUndefined();
    expect(memo.answerFor(desired, table)).toBe(kept);
    // Another table read (other objects, even if equal) is planned afresh.
    expect(memo.answerFor(desired, [])).toBeUndefined();
    expect(memo.answerFor([], table)).toBeUndefined();
    memo.forget();
    expect(memo.desiredFor(bytes)).toBeUndefined();
    expect(memo.answerFor(desired, table)).toBeUndefined();
  });

  it("keeps a copy of the request: the buffer it came in may be reused", () => {
    const memo = new NoChangeMemo();
    const frame = new Uint8Array([9, 9, 1, 2, 3, 9]);
    memo.keep(frame.subarray(2, 5), desired, table, answer());
    frame.set([7, 7, 7], 2);
    expect(memo.desiredFor(frame.subarray(2, 5))).toBeUndefined();
    expect(memo.desiredFor(new Uint8Array([1, 2, 3]))).toBe(desired);
  });

  it("keeps nothing for a table over KEPT_TABLE_MAX_ROUTES, and drops what it kept", () => {
    const memo = new NoChangeMemo();
    memo.keep(new Uint8Array([1]), desired, table, answer());
    const big = new Array<Route>(KEPT_TABLE_MAX_ROUTES + 1);
    const a = answer();
    expect(memo.keep(new Uint8Array([2]), desired, big, a)).toBe(a);
    expect(Object.isFrozen(a)).toBe(false);
    expect(memo.desiredFor(new Uint8Array([1]))).toBeUndefined();
    expect(memo.desiredFor(new Uint8Array([2]))).toBeUndefined();
    const atBound = new Array<Route>(KEPT_TABLE_MAX_ROUTES);
    memo.keep(new Uint8Array([3]), desired, atBound, answer());
    expect(memo.desiredFor(new Uint8Array([3]))).toBe(desired);
  });

  it("keeps nothing for an in-process call (no bytes)", () => {
    const memo = new NoChangeMemo();
    const a = answer();
    expect(memo.keep(undefined, desired, table, a)).toBe(a);
    expect(Object.isFrozen(a)).toBe(false);
    expect(memo.answerFor(desired, table)).toBeUndefined();
  });

  it("freezes the kept answer, which is then encoded once, to the same bytes", () => {
    const encode = FAST_ENCODERS.get(RoutesSchema.typeName) as (m: {
      $typeName: string;
    }) => Uint8Array;
    const fresh = encode(answer());
    const kept = new NoChangeMemo().keep(new Uint8Array([1]), desired, table, answer());
    expect(Object.isFrozen(kept)).toBe(true);
    expect(Object.isFrozen(kept.Routes)).toBe(true);
    const first = encode(kept);
    expect(encode(kept)).toBe(first);
    expect(first).toEqual(fresh);
    expect(fromBinary(RoutesSchema, first).Routes[0]?.gateway).toBe("10.1.1.1");
    // An answer not frozen is encoded anew each time.
    const open = answer();
    expect(encode(open)).not.toBe(encode(open));
  });
});
