/**
 * Neighbour attributes (vocabulary/neighbor-attrs.ts): the parser on
 * `ip -j neigh show` and `neigh show proxy` output (iproute2 6.1, recorded
 * in a throwaway netns), Apply's validation (INVALID_ARGUMENT naming field
 * and value), the batch lines of an entry and of its delete.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { validateApply } from "../../src/agent/validate/validate-state";
import { ApplyRequestSchema } from "../../src/gen/network_pb";
import { parseNeighbors } from "../../src/net/parse/parse-ip-json";
import {
  neighborKey,
  renderNeighborDelete,
  renderPermanentNeighbor,
} from "../../src/net/plan/plan-neighbors";

const NEIGH = [
  {
    dst: "10.9.0.7",
    dev: "v0",
    lladdr: "02:00:00:00:00:07",
    extern_learn: null,
    state: ["PERMANENT"],
  },
  { dst: "10.9.0.8", dev: "v0", lladdr: "02:00:00:00:00:08", router: null, state: ["PERMANENT"] },
];
const PROXY = [
  { dst: "10.9.0.50", dev: "v0", proxy: null },
  { dst: "fd00::51", dev: "v0", router: null, proxy: null },
];

function accepted(neighbors: unknown[]) {
  return validateApply(create(ApplyRequestSchema, { desired: { neighbors: neighbors as never } }))
    .neighbors;
}

function refused(neighbors: unknown[]): string {
  try {
    accepted(neighbors);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("accepted");
}

describe("neighbour attributes", () => {
  it("parses extern_learn and proxy entries", () => {
    const [e, r] = parseNeighbors(NEIGH);
    expect(e?.attrs).toEqual([["extern_learn", "on"]]);
    expect(r?.attrs).toBeUndefined();
    expect(r?.router).toBe(true);
    const [p4, p6] = parseNeighbors(PROXY);
    expect(p4).toEqual({
      family: 4,
      ip: "10.9.0.50",
      dev: "v0",
      lladdr: "",
      state: [],
      router: false,
      attrs: [["proxy", "on"]],
    });
    expect(p6?.router).toBe(true);
    expect(neighborKey(p4 as never)).toBe("proxy 10.9.0.50 v0");
  });

  it("renders entries and deletes", () => {
    const [e] = parseNeighbors(NEIGH);
    const [p4, p6] = parseNeighbors(PROXY);
    expect(renderPermanentNeighbor(e as never)).toBe(
      "neigh replace 10.9.0.7 lladdr 02:00:00:00:00:07 dev v0 nud permanent extern_learn",
    );
    expect(renderPermanentNeighbor(p6 as never)).toBe("neigh replace proxy fd00::51 dev v0 router");
    expect(renderNeighborDelete(p4 as never)).toBe("neigh del proxy 10.9.0.50 dev v0");
    expect(renderNeighborDelete(e as never)).toBe("neigh del 10.9.0.7 dev v0");
  });

  it("validates: a proxy entry has no MAC, every other one has one; names from the table", () => {
    expect(
      accepted([{ address: "10.9.0.50", device: "eth0", attrs: [{ name: "proxy", value: "on" }] }]),
    ).toEqual([
      {
        family: 4,
        ip: "10.9.0.50",
        dev: "eth0",
        lladdr: "",
        router: false,
        attrs: [["proxy", "on"]],
      },
    ]);
    expect(
      refused([
        {
          address: "10.9.0.50",
          device: "eth0",
          lladdr: "02:00:00:00:00:01",
          attrs: [{ name: "proxy", value: "on" }],
        },
      ]),
    ).toBe(
      'desired.neighbors[0].lladdr: "02:00:00:00:00:01" is given for a proxy entry (it has none)',
    );
    expect(refused([{ address: "10.9.0.5", device: "eth0", lladdr: "" }])).toContain(
      "desired.neighbors[0].lladdr",
    );
    expect(
      refused([
        {
          address: "10.9.0.5",
          device: "eth0",
          lladdr: "02:00:00:00:00:01",
          attrs: [{ name: "nud", value: "stale" }],
        },
      ]),
    ).toContain('desired.neighbors[0].attrs[0]: "nud" is not an attribute of its kind');
    const many = Array.from({ length: 33 }, () => ({ name: "proxy", value: "on" }));
    expect(refused([{ address: "10.9.0.5", device: "eth0", attrs: many }])).toBe(
      "desired.neighbors[0].attrs: 33 entries: at most 32 are accepted",
    );
  });
});
