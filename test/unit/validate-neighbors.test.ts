/**
 * Validation of a Kata AddARPNeighbors request (validate-interface-
 * neighbors.ts), table-driven: every invalid field is INVALID_ARGUMENT
 * naming the field and the value; valid entries come out as model
 * neighbours, multicast ones skipped.
 */

import { describe, expect, it } from "vitest";
import { validateNeighbors } from "../../src/agent/validate/validate-interface-neighbors";
import { IPFamily } from "../../src/gen/types_pb";
import { invalid, type NeighborInit, neighbor } from "../helpers/validate-requests";

describe("validateNeighbors", () => {
  it.each<[string, NeighborInit, string, unknown]>([
    ["missing toIPAddress", { toIPAddress: undefined }, "neighbors[0].toIPAddress", null],
    [
      "bad address",
      { toIPAddress: { address: "1.2.3" } },
      "neighbors[0].toIPAddress.address",
      "1.2.3",
    ],
    [
      "family v6 with IPv4",
      { toIPAddress: { family: IPFamily.v6, address: "10.0.0.1" } },
      "neighbors[0].toIPAddress.family",
      "v6",
    ],
    ["device lo", { device: "lo" }, "neighbors[0].device", "lo"],
    ["empty device", { device: "" }, "neighbors[0].device", ""],
    ["device with a newline", { device: "eth0\nx" }, "neighbors[0].device", "eth0\nx"],
    ["bad lladdr", { lladdr: "02:00" }, "neighbors[0].lladdr", "02:00"],
    ["zero lladdr", { lladdr: "00:00:00:00:00:00" }, "neighbors[0].lladdr", "00:00:00:00:00:00"],
    ["state 3 (two states)", { state: 3 }, "neighbors[0].state", 3],
    ["state 256", { state: 256 }, "neighbors[0].state", 256],
    ["state -1", { state: -1 }, "neighbors[0].state", -1],
    ["empty lladdr, state 0 (permanent)", { lladdr: "", state: 0 }, "neighbors[0].lladdr", ""],
    ["empty lladdr, permanent", { lladdr: "", state: 128 }, "neighbors[0].lladdr", ""],
    ["empty lladdr, reachable", { lladdr: "", state: 2 }, "neighbors[0].lladdr", ""],
    ["flags 1", { flags: 1 }, "neighbors[0].flags", 1],
  ])("%s", (_what, n, field, value) => {
    invalid(() => validateNeighbors([neighbor(n)]), field, value);
  });

  it("maps state 0 to permanent, flags to router/extern_learn, lower-cases lladdr", () => {
    expect(
      validateNeighbors([
        neighbor({ lladdr: "02:AA:00:00:00:02", state: 0, flags: 0x80 }),
        neighbor({
          toIPAddress: { address: "2001:db8::1" },
          state: 4,
          flags: 0x10,
          lladdr: "",
        }),
      ]),
    ).toEqual({
      specs: [
        {
          ip: "10.0.0.1",
          family: 4,
          dev: "eth0",
          lladdr: "02:aa:00:00:00:02",
          nud: "permanent",
          router: true,
          externLearned: false,
        },
        {
          ip: "2001:db8::1",
          family: 6,
          dev: "eth0",
          lladdr: "",
          nud: "stale",
          router: false,
          externLearned: true,
        },
      ],
      skipped: [],
    });
  });

  it("skips multicast entries (IPv4 224/4, IPv6 ff00::/8)", () => {
    expect(
      validateNeighbors([
        neighbor({ toIPAddress: { address: "224.0.0.251" } }),
        neighbor({ toIPAddress: { address: "239.255.255.250" } }),
        neighbor({ toIPAddress: { address: "ff02::1:ff00:1" } }),
        neighbor({ toIPAddress: { address: "240.0.0.1" } }),
      ]),
    ).toMatchObject({
      specs: [{ ip: "240.0.0.1" }],
      skipped: ["224.0.0.251", "239.255.255.250", "ff02::1:ff00:1"],
    });
  });
});
