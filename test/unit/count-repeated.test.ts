/**
 * countRepeated: repeated fields counted on the wire before decoding, so a
 * 4 MiB run of `0a 00` (two million empty Routes) is refused without being
 * built.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { UpdateInterfaceRequestSchema, UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { RequestSchema } from "../../src/gen/ttrpc_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { countRepeated } from "../../src/ttrpc/count-repeated";

/** UpdateRoutesRequest{routes(1): Routes{Routes(1): `n` empty routes}}. */
function emptyRoutes(n: number): Uint8Array {
  const inner = new Uint8Array(2 * n);
  for (let i = 0; i < n; i++) inner[2 * i] = 0x0a;
  const len: number[] = [];
  for (let v = inner.length; ; v >>>= 7) {
    if (v < 0x80) {
      len.push(v);
      break;
    }
    len.push((v & 0x7f) | 0x80);
  }
  const out = new Uint8Array(1 + len.length + inner.length);
  out.set([0x0a, ...len]);
  out.set(inner, 1 + len.length);
  return out;
}

function refusal(f: () => void): TtrpcError {
  try {
    f();
  } catch (err) {
    return err as TtrpcError;
  }
  throw new Error("expected a refusal");
}

describe("countRepeated", () => {
  it("lets the limit through and refuses one more, naming the field", () => {
    countRepeated(UpdateRoutesRequestSchema, emptyRoutes(1000), 1000);
    const err = refusal(() => countRepeated(UpdateRoutesRequestSchema, emptyRoutes(1001), 1000));
    expect(err).toBeInstanceOf(TtrpcError);
    expect([err.code, err.message]).toEqual([
      Code.RESOURCE_EXHAUSTED,
      "routes.Routes: more than 1000 entries (the agent's limit)",
    ]);
  });

  it("a 4 MiB run of 0a 00: refused at the first entry past the limit", () => {
    const bytes = emptyRoutes((4 << 20) / 2 - 4);
    const err = refusal(() => countRepeated(UpdateRoutesRequestSchema, bytes, 100_000));
    expect(err.code).toBe(Code.RESOURCE_EXHAUSTED);
  });

  it("counts nested lists (addresses of an interface) and the envelope's metadata", () => {
    const iface = create(UpdateInterfaceRequestSchema, {
      interface: { IPAddresses: Array.from({ length: 11 }, () => ({ address: "x" })) },
    });
    const bytes = toBinary(UpdateInterfaceRequestSchema, iface);
    countRepeated(UpdateInterfaceRequestSchema, bytes, 11);
    expect(refusal(() => countRepeated(UpdateInterfaceRequestSchema, bytes, 10)).message).toBe(
      "interface.IPAddresses: more than 10 entries (the agent's limit)",
    );
    const req = create(RequestSchema, {
      service: "s",
      metadata: Array.from({ length: 5 }, () => ({ key: "k", value: "v" })),
    });
    expect(() => countRepeated(RequestSchema, toBinary(RequestSchema, req), 4)).toThrow(
      /^metadata: more than 4/,
    );
  });

  it("leaves malformed bytes to the decoder: no throw for truncation or groups", () => {
    for (const bytes of [[0x0a], [0x0a, 0xff, 0xff], [0x0b, 0x0c], [0xff, 0xff, 0xff]]) {
      expect(() =>
        countRepeated(UpdateRoutesRequestSchema, Uint8Array.from(bytes), 1),
      ).not.toThrow();
    }
  });
});
