/**
 * The host's hand-written codecs against protobuf-es: encodeApplyRequest
 * (state-writer.ts) writes toBinary's bytes, decodeApplyResponse and
 * decodeState (state-reader.ts) read fromBinary's message (deep, strict,
 * key order included), or each declines (undefined) and the client uses
 * protobuf-es. On row 12's state they answer; on random values (any text,
 * unknown fields, left_out entries, mutated bytes) they answer
 * protobuf-es's or nothing. The tables AgentClient.unary reads name them.
 */
import { create, type MessageInitShape, toBinary, type UnknownField } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ApplyRequestSchema,
  ApplyResponseSchema,
  Network,
  StateSchema,
} from "../../src/gen/network_pb";
import { FAST_ANSWER_DECODERS, FAST_REQUEST_ENCODERS } from "../../src/wire/fast-codecs";
import { decodeApplyResponse, decodeState } from "../../src/wire/state-reader";
import { encodeApplyRequest } from "../../src/wire/state-writer";
import { largeStateAsRead, largeStatePlan } from "../support/large-state";
import {
  addUnknown,
  agrees,
  ascii,
  hex,
  mutated,
  state,
  statePlace,
  text,
  unknownField,
} from "./state-codec-helpers";

type Path = (string | number)[];
const unknowns = (places: fc.Arbitrary<Path>) =>
  fc.array(fc.tuple(places, unknownField), { maxLength: 2 });
const elementPlace = statePlace.filter((p) => p.length > 0);
const withUnknowns = <T extends object>(m: T, list: [Path, UnknownField][]) => {
  for (const [path, field] of list) addUnknown(m, path, field);
  return m;
};

type RequestInit = MessageInitShape<typeof ApplyRequestSchema>;
const request = (str: fc.Arbitrary<string>, places: fc.Arbitrary<Path>) =>
  fc
    .tuple(
      fc.record(
        {
          desired: state(str),
          dryRun: fc.boolean(),
          exact: fc.boolean(),
          bestEffort: fc.boolean(),
        },
        { requiredKeys: [] },
      ),
      unknowns(places),
    )
    .map(([r, u]) => withUnknowns(create(ApplyRequestSchema, r as RequestInit), u));

type ResponseInit = MessageInitShape<typeof ApplyResponseSchema>;
const response = (str: fc.Arbitrary<string>, places: fc.Arbitrary<Path>) =>
  fc
    .tuple(
      fc.record(
        {
          result: state(str),
          plan: fc.array(str, { maxLength: 4 }),
          leftOut: fc.array(fc.record({ field: str, reason: str }), { maxLength: 2 }),
        },
        { requiredKeys: [] },
      ),
      unknowns(places),
    )
    .map(([r, u]) => withUnknowns(create(ApplyResponseSchema, r as ResponseInit), u));
const responseBytes = (str: fc.Arbitrary<string>, places: fc.Arbitrary<Path>) =>
  response(str, places).map((m) => toBinary(ApplyResponseSchema, m));

/** Unknown fields inside elements only: the fast reader still answers (fromBinary per element). */
const insideElements = fc.oneof(
  elementPlace.map((p) => ["result", ...p]),
  fc.tuple(fc.constant("leftOut"), fc.nat(1)),
);
const anywhere = fc.oneof(
  fc.constant([] as Path),
  statePlace.map((p) => ["result", ...p]),
  fc.tuple(fc.constant("leftOut"), fc.nat(1)),
);

describe("the host's Apply codecs on row 12's state", () => {
  const desired = largeStateAsRead();

  it("encodeApplyRequest writes toBinary's bytes, every combination of the flags", () => {
    for (let flags = 0; flags < 8; flags++) {
      const m = create(ApplyRequestSchema, {
        desired,
        dryRun: (flags & 1) !== 0,
        exact: (flags & 2) !== 0,
        bestEffort: (flags & 4) !== 0,
      });
      const fast = encodeApplyRequest(m);
      expect(fast).toBeDefined();
      expect(hex(fast as Uint8Array)).toBe(hex(toBinary(ApplyRequestSchema, m)));
    }
    const empty = create(ApplyRequestSchema, { exact: true });
    expect(hex(encodeApplyRequest(empty) as Uint8Array)).toBe(
      hex(toBinary(ApplyRequestSchema, empty)),
    );
  });

  it("decodeApplyResponse and decodeState read fromBinary's messages", () => {
    const answer = create(ApplyResponseSchema, {
      result: desired,
      plan: largeStatePlan(desired),
      leftOut: [{ field: "desired.routes[3]", reason: "ip route replace: No such device" }],
    });
    const bytes = toBinary(ApplyResponseSchema, answer);
    expect(agrees(ApplyResponseSchema, decodeApplyResponse, bytes)).toBe(true);
    expect(agrees(StateSchema, decodeState, toBinary(StateSchema, desired))).toBe(true);
    // No result, an empty one, an empty plan line: answered too.
    for (const m of [{}, { result: {} }, { plan: ["", "route flush table 100"] }]) {
      const bytes = toBinary(ApplyResponseSchema, create(ApplyResponseSchema, m));
      expect(agrees(ApplyResponseSchema, decodeApplyResponse, bytes)).toBe(true);
    }
  });

  it("AgentClient's tables name them for Apply and Get", () => {
    expect(FAST_REQUEST_ENCODERS.get(Network.method.apply.input.typeName)).toBe(encodeApplyRequest);
    expect(FAST_ANSWER_DECODERS.get(Network.method.apply.output.typeName)).toBe(
      decodeApplyResponse,
    );
    expect(FAST_ANSWER_DECODERS.get(Network.method.get.output.typeName)).toBe(decodeState);
  });
});

describe("encodeApplyRequest against toBinary", () => {
  it("ASCII text, unknown fields inside elements: toBinary's bytes", () => {
    const inside = elementPlace.map((p) => ["desired", ...p]);
    fc.assert(
      fc.property(request(ascii, inside), (m) => {
        const fast = encodeApplyRequest(m);
        expect(fast).toBeDefined();
        expect(hex(fast as Uint8Array)).toBe(hex(toBinary(ApplyRequestSchema, m)));
      }),
      { numRuns: 3_000 },
    );
  });

  it("any text, unknown fields anywhere: toBinary's bytes or no answer", () => {
    const places = fc.oneof(
      fc.constant([] as Path),
      statePlace.map((p) => ["desired", ...p]),
    );
    let answered = 0;
    fc.assert(
      fc.property(request(text, places), (m) => {
        const fast = encodeApplyRequest(m);
        if (fast === undefined) return;
        answered++;
        expect(hex(fast)).toBe(hex(toBinary(ApplyRequestSchema, m)));
      }),
      { numRuns: 3_000 },
    );
    expect(answered).toBeGreaterThan(1000);
  });

  it("another message, or a flag that is no bool, is left to toBinary", () => {
    expect(encodeApplyRequest(create(StateSchema))).toBeUndefined();
    const m = create(ApplyRequestSchema, { desired: {} });
    (m as unknown as Record<string, unknown>).exact = 1;
    expect(encodeApplyRequest(m)).toBeUndefined();
  });
});

describe("decodeApplyResponse and decodeState against fromBinary", () => {
  it("ASCII text, unknown fields inside elements: fromBinary's message", () => {
    fc.assert(
      fc.property(responseBytes(ascii, insideElements), (bytes) => {
        expect(agrees(ApplyResponseSchema, decodeApplyResponse, bytes)).toBe(true);
      }),
      { numRuns: 3_000 },
    );
  });

  it("any text, unknown fields anywhere: fromBinary's message or no answer", () => {
    let answered = 0;
    fc.assert(
      fc.property(responseBytes(text, anywhere), (bytes) => {
        if (agrees(ApplyResponseSchema, decodeApplyResponse, bytes)) answered++;
      }),
      { numRuns: 3_000 },
    );
    expect(answered).toBeGreaterThan(1000);
  });

  it("a plan line past ASCII is left to fromBinary", () => {
    const bytes = toBinary(ApplyResponseSchema, create(ApplyResponseSchema, { plan: ["é"] }));
    expect(decodeApplyResponse(bytes)).toBeUndefined();
  });

  it("mutated encodings and random bytes: fromBinary's message or no answer", () => {
    let answered = 0;
    const start = fc.oneof(responseBytes(ascii, insideElements), fc.uint8Array({ maxLength: 40 }));
    fc.assert(
      fc.property(mutated(start), (bytes) => {
        if (agrees(ApplyResponseSchema, decodeApplyResponse, bytes)) answered++;
      }),
      { numRuns: 10_000 },
    );
    expect(answered).toBeGreaterThan(1500);
  });

  it("decodeState: fromBinary's State, of random states and their mutations", () => {
    const states = state(text).map((s) =>
      toBinary(StateSchema, create(StateSchema, s as MessageInitShape<typeof StateSchema>)),
    );
    let answered = 0;
    fc.assert(
      fc.property(fc.oneof(states, mutated(states)), (bytes) => {
        if (agrees(StateSchema, decodeState, bytes)) answered++;
      }),
      { numRuns: 5_000 },
    );
    expect(answered).toBeGreaterThan(2500);
  });
});
