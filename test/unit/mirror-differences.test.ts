/**
 * Each entry of src/host/compare/mirror-differences.ts, the one list of what
 * legitimately differs: a pod and a guest read that differ in exactly
 * that compare equal, and the same pair with a neighbouring attribute
 * changed (one the entry does not cover) does not (the cases:
 * mirror-cases.ts). Every entry has its case (the first test holds the
 * two lists to the same names); the netns test
 * test/netns/mirror-differences.test.ts shows the kernel making each
 * difference by itself.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { compareComplete } from "../../src/host/compare/complete-diff";
import type { CompleteRead } from "../../src/host/compare/complete-read";
import { sameDecision } from "../../src/host/compare/lookup-compare";
import { MIRROR_DIFFERENCES } from "../../src/host/compare/mirror-differences";
import { sourceAloneDiffers, sourceOrderNotes } from "../../src/host/compare/source-order";
import { emptyRead, multipath6 } from "./complete-helpers";
import { CASES, veth } from "./mirror-cases";

describe("MIRROR_DIFFERENCES", () => {
  it("has a case here for every entry, and each says what and why", () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(MIRROR_DIFFERENCES).sort());
    for (const d of Object.values(MIRROR_DIFFERENCES)) {
      expect(d.what.length).toBeGreaterThan(4);
      expect(d.why.length).toBeGreaterThan(20);
    }
  });

  for (const [name, c] of Object.entries(CASES)) {
    if (name.startsWith("lookup")) continue;
    it(`${name}: left out, and its neighbour is still compared`, () => {
      const counted = (pod: Partial<CompleteRead>, guest: Partial<CompleteRead>) =>
        compareComplete(emptyRead(pod), emptyRead(guest)).filter((f) => !f.carrier);
      expect(counted(c.pod, c.guest)).toEqual([]);
      expect(counted(c.pod, c.near).length).toBeGreaterThan(0);
    });
  }

  it("lookupCache: a lookup's learned exceptions are left out, its route is not", () => {
    const route = {
      type: "unicast",
      dst: "10.8.1.1",
      gateway: "10.9.0.2",
      dev: "eth0",
      table: "main",
      flags: [],
      uid: 0,
    };
    const a = { route: { ...route, cache: [] } };
    const b = { route: { ...route, cache: [{ expires: 599, mtu: 1400 }] } };
    expect(sameDecision(a, b)).toBe(true);
    expect(sameDecision(a, { route: { ...route, gateway: "10.9.0.3", cache: [] } })).toBe(false);
    expect(sameDecision({ error: "Permission denied" }, { error: "Permission denied" })).toBe(true);
    expect(sameDecision(a, { error: "Permission denied" })).toBe(false);
  });
});

describe("routeCarrierOnly", () => {
  it("named as carrier's (not left out): each such route is a finding marked carrier", () => {
    const c = CASES.routeCarrierOnly;
    const found = compareComplete(emptyRead(c.pod), emptyRead(c.guest));
    expect(found.map((f) => [f.field, f.carrier])).toEqual([
      ["guest only", true],
      ["guest only", true],
    ]);
    expect(found.map((f) => f.what).join("\n")).toMatch(/ff00::\/8/);
  });
});

describe("lookupSourceOtherLink, lookupSourceMultipathHop (the judge: source-order.test.ts)", () => {
  const pod = emptyRead({
    links: [
      { ...veth, ifname: "eth0" },
      { ...veth, ifname: "net1", address: "02:00:00:00:00:02" },
      { ...veth, ifname: "eth2", address: "02:00:00:00:00:03" },
    ],
    addresses: [
      {
        ifname: "eth0",
        addr_info: [{ family: "inet", local: "10.1.0.2", prefixlen: 24, scope: "global" }],
      },
      {
        ifname: "net1",
        addr_info: [{ family: "inet6", local: "fd00::2", prefixlen: 64, scope: "global" }],
      },
      {
        ifname: "eth2",
        addr_info: [{ family: "inet", local: "10.2.0.2", prefixlen: 24, scope: "global" }],
      },
    ],
    routes: [multipath6("fd00::2", "net1", "fd00::1", "fe80::1")],
  });
  const spec = (oif: string, to = "10.9.9.9", iif = "") => ({
    to,
    from: "",
    iif,
    oif,
    mark: 0,
    ipproto: 0,
    sport: 0,
    dport: 0,
    uid: 0,
    tos: 0,
  });
  const at = (prefsrc: string | undefined, dev = "net1", more: Record<string, unknown> = {}) => ({
    route: {
      type: "unicast",
      dst: "10.9.9.9",
      dev,
      prefsrc,
      table: "main",
      flags: [],
      uid: 0,
      ...more,
    },
  });

  it("names the pod's links without a source of a family another link has", () => {
    expect(sourceOrderNotes(pod)).toEqual([
      "lookups through net1 (no IPv4 source of its own) take their IPv4 source from another link, the first in the order the links were made, which in the guest is the hypervisor's: they can differ in the source",
      "lookups through eth0 (no IPv6 source of its own) take their IPv6 source from another link, the first in the order the links were made, which in the guest is the hypervisor's: they can differ in the source",
      "lookups through eth2 (no IPv6 source of its own) take their IPv6 source from another link, the first in the order the links were made, which in the guest is the hypervisor's: they can differ in the source",
    ]);
  });

  it("a lookup through such a link differing in the source alone, between two other links' first addresses; anything else is compared", () => {
    expect(sourceAloneDiffers(spec("net1"), at("10.1.0.2"), at("10.2.0.2"), pod)).toBe(true);
    // A source the pod does not have is compared.
    expect(sourceAloneDiffers(spec("net1"), at("10.1.0.2"), at("10.3.0.2"), pod)).toBe(false);
    // Through a link with an address of its own, the source is compared.
    expect(
      sourceAloneDiffers(spec("eth0"), at("10.1.0.2", "eth0"), at("10.2.0.2", "eth0"), pod),
    ).toBe(false);
    // With another device, compared.
    expect(sourceAloneDiffers(spec("net1"), at("10.1.0.2"), at("10.2.0.2", "eth0"), pod)).toBe(
      false,
    );
  });

  it("an input lookup through the appended hop of an IPv6 multipath route: the route's listed source or none", () => {
    const hop = (prefsrc: string | undefined) =>
      at(prefsrc, "net1", { dst: "::1", gateway: "fe80::1", iif: "net1" });
    const lookup = spec("", "::1", "net1");
    expect(sourceAloneDiffers(lookup, hop(undefined), hop("fd00::2"), pod)).toBe(true);
    expect(sourceAloneDiffers(lookup, hop(undefined), hop("fd00::9"), pod)).toBe(false);
    const first = (prefsrc: string | undefined) =>
      at(prefsrc, "net1", { dst: "::1", gateway: "fd00::1", iif: "net1" });
    expect(sourceAloneDiffers(lookup, first(undefined), first("fd00::2"), pod)).toBe(false);
  });
});

describe("lookupKernelLinkLocalSource", () => {
  it("two kernel link-locals as the source agree; any other source is compared", () => {
    const route = { type: "anycast", dst: "fe80::", dev: "lo", table: "local", flags: [], uid: 0 };
    const at = (prefsrc: string) => ({ route: { ...route, prefsrc } });
    expect(sameDecision(at("fe80::a8ae:29ff:fe2d:4665"), at("fe80::906b:d8ff:fece:c451"))).toBe(
      true,
    );
    expect(sameDecision(at("fe80::a8ae:29ff:fe2d:4665"), at("fe80::1"))).toBe(false);
    expect(sameDecision(at("fd00::5"), at("fd00::6"))).toBe(false);
    expect(
      sameDecision(at("fe80::a8ae:29ff:fe2d:4665"), {
        route: { ...route, dev: "eth0", prefsrc: "fe80::906b:d8ff:fece:c451" },
      }),
    ).toBe(false);
  });
});

describe("the list in docs/diff.md", () => {
  it("says every entry, what and why, as the code has it", () => {
    const readme = readFileSync(new URL("../../docs/diff.md", import.meta.url), "utf8").replace(
      /\s+/g,
      " ",
    );
    for (const d of Object.values(MIRROR_DIFFERENCES)) {
      const line = `- ${d.kind}: ${d.what}: ${d.why}.`.replace(/\s+/g, " ");
      expect(readme.includes(line), line).toBe(true);
    }
  });
});
