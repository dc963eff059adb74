/**
 * The judge of a lookup's source (src/host/compare/source-order.ts), which
 * diff and test/podgen share: two answers alike but for the preferred
 * source are explained only when both sources are ones the kernel's rule
 * chooses between by an order no listing carries (the order links were
 * made; a hop appended to an IPv6 multipath route). Each case beside its
 * neighbours that must still count as different: an address the pod does
 * not have, a secondary one, another scope, a deprecated one, a longer
 * shared prefix, the outgoing link's own, a link with a source of its own.
 * The shapes are those of seeds of the generator that differed so.
 */
import { describe, expect, it } from "vitest";
import type { Json } from "../../src/host/compare/complete-read";
import { sourceByOrder } from "../../src/host/compare/source-order";
import type { SourceQuestion } from "../../src/host/compare/source-question";
import { emptyRead, multipath6 } from "./complete-helpers";

const a4 = (local: string, more: Json = {}) => ({
  family: "inet",
  local,
  prefixlen: 24,
  scope: "global",
  ...more,
});
const a6 = (local: string, more: Json = {}) => ({
  family: "inet6",
  local,
  prefixlen: 64,
  scope: "global",
  ...more,
});
const link = (ifname: string, ...addr_info: Json[]) => ({ ifname, addr_info });

// The pod's links, in the order they were made: lo, vnic (host-scoped IPv4 only), tun0, eth0.
const pod = emptyRead({
  links: ["lo", "vnic", "tun0", "eth0", "vrf1", "red0"].map((ifname) => ({ ifname })),
  addresses: [
    link("lo", a4("127.0.0.1", { prefixlen: 8, scope: "host" }), a6("::1", { scope: "host" })),
    link("vnic", a4("10.159.87.4", { scope: "host" }), a6("fe80::1", { scope: "link" })),
    link("tun0", a4("10.125.0.5", { prefixlen: 32 }), a6("fd75:0:0:200::f58")),
    link(
      "eth0",
      a4("10.122.30.3"),
      a4("10.122.30.9", { secondary: true }),
      a4("10.122.31.3", { scope: "link" }),
      a6("fd75:0:0:301::82c"),
      a6("fd75:0:0:300::71a"),
      a6("fd75:0:0:100::9", { deprecated: true }),
      a6("fd75:0:0:1ff::7"),
    ),
    link("red0", a4("10.7.0.1"), a6("fd75:0:0:202::1")),
  ],
});
pod.links.push({ ifname: "vrf1", linkinfo: { info_kind: "vrf" } });
(pod.links.find((l) => l.ifname === "red0") as Json).master = "vrf1";

const q4 = (dev: string, p: string, g: string, more: Partial<SourceQuestion> = {}) => ({
  to: "10.94.198.93",
  input: false,
  dev,
  table: "main",
  pod: p,
  guest: g,
  ...more,
});

describe("IPv4: a link without a global primary address takes the source of the first link made", () => {
  it("through lo or a link with a host-scoped address only: the first global primary of two other links", () => {
    expect(sourceByOrder(q4("lo", "10.125.0.5", "10.122.30.3"), pod)).toBe("lookupSourceOtherLink");
    expect(sourceByOrder(q4("vnic", "10.125.0.5", "10.122.30.3"), pod)).toBe(
      "lookupSourceOtherLink",
    );
  });

  it("still different: a link with a source of its own, an address the pod has not, a secondary, a link scope, an input lookup, a VRF's", () => {
    expect(sourceByOrder(q4("eth0", "10.125.0.5", "10.122.30.3"), pod)).toBeUndefined();
    expect(sourceByOrder(q4("lo", "10.125.0.5", "10.99.0.1"), pod)).toBeUndefined();
    expect(sourceByOrder(q4("lo", "10.125.0.5", "10.122.30.9"), pod)).toBeUndefined();
    expect(sourceByOrder(q4("lo", "10.125.0.5", "10.122.31.3"), pod)).toBeUndefined();
    expect(sourceByOrder(q4("lo", "10.125.0.5", "10.159.87.4"), pod)).toBeUndefined();
    expect(sourceByOrder(q4("lo", "10.125.0.5", "127.0.0.1"), pod)).toBeUndefined();
    expect(
      sourceByOrder(q4("lo", "10.125.0.5", "10.122.30.3", { input: true }), pod),
    ).toBeUndefined();
    expect(sourceByOrder(q4("lo", "10.125.0.5", "10.7.0.1"), pod)).toBeUndefined();
    expect(sourceByOrder(q4("lo", "10.125.0.5", undefined as never), pod)).toBeUndefined();
  });
});

const q6 = (to: string, p: string, g: string, more: Partial<SourceQuestion> = {}) => ({
  to,
  input: false,
  dev: "vnic",
  table: "main",
  pod: p,
  guest: g,
  ...more,
});

describe("IPv6: two other links' addresses equal under every rule of the kernel's ranking", () => {
  const to = "fd75:0:0:100:4c88:d92:11e2:eafe";

  it("the same scope, label and shared prefix (54 bits), on two links: the first met wins", () => {
    expect(sourceByOrder(q6(to, "fd75:0:0:200::f58", "fd75:0:0:301::82c"), pod)).toBe(
      "lookupSourceOtherLink",
    );
  });

  it("still different: a longer shared prefix, deprecated, another scope, not the pod's, the outgoing link's, one link, a link-local or multicast destination, a VRF's", () => {
    // fd75:0:0:1ff::7 shares 55 bits with the destination: it ranks above.
    expect(sourceByOrder(q6(to, "fd75:0:0:200::f58", "fd75:0:0:1ff::7"), pod)).toBeUndefined();
    expect(sourceByOrder(q6(to, "fd75:0:0:200::f58", "fd75:0:0:100::9"), pod)).toBeUndefined();
    expect(sourceByOrder(q6(to, "fd75:0:0:200::f58", "fe80::1"), pod)).toBeUndefined();
    expect(sourceByOrder(q6(to, "fd75:0:0:200::f58", "fd75:0:0:999::1"), pod)).toBeUndefined();
    expect(
      sourceByOrder(q6(to, "fd75:0:0:200::f58", "fd75:0:0:301::82c", { dev: "eth0" }), pod),
    ).toBeUndefined();
    expect(sourceByOrder(q6(to, "fd75:0:0:300::71a", "fd75:0:0:301::82c"), pod)).toBeUndefined();
    expect(
      sourceByOrder(q6("fe80::9", "fd75:0:0:200::f58", "fd75:0:0:301::82c"), pod),
    ).toBeUndefined();
    expect(
      sourceByOrder(q6("ff02::9", "fd75:0:0:200::f58", "fd75:0:0:301::82c"), pod),
    ).toBeUndefined();
    expect(sourceByOrder(q6(to, "fd75:0:0:200::f58", "fd75:0:0:202::1"), pod)).toBeUndefined();
    expect(
      sourceByOrder(q6(to, "fd75:0:0:200::f58", "fd75:0:0:301::82c", { input: true }), pod),
    ).toBeUndefined();
  });

  it("a link asking for temporary addresses (use_tempaddr 2) ranks its public ones below: no tie", () => {
    const temp = emptyRead({
      ...pod,
      sysctls: new Map([["ipv6/conf/eth0/use_tempaddr", "2"]]),
    });
    expect(sourceByOrder(q6(to, "fd75:0:0:200::f58", "fd75:0:0:301::82c"), temp)).toBeUndefined();
  });
});

describe("IPv6: a hop appended to a multipath route keeps its own source, which no listing shows", () => {
  const mp = emptyRead({
    ...pod,
    routes: [multipath6("fd75:0:0:301::82c", "eth0", "fd75:0:0:301::1", "fe80::3")],
  });
  const hop = (p: string | undefined, g: string | undefined, more: Partial<SourceQuestion> = {}) =>
    ({
      to: "::1",
      input: true,
      dev: "eth0",
      gateway: "fe80::3",
      table: "main",
      pod: p,
      guest: g,
      ...more,
    }) satisfies SourceQuestion;

  it("an input lookup through the second hop: none in the pod, the route's listed source in the guest", () => {
    expect(sourceByOrder(hop(undefined, "fd75:0:0:301::82c"), mp)).toBe("lookupSourceMultipathHop");
    expect(sourceByOrder(hop("fd75:0:0:300::71a", "fd75:0:0:301::82c"), mp)).toBe(
      "lookupSourceMultipathHop",
    );
  });

  it("still different: the first hop, another table, a guest source not the route's, a pod source not the pod's", () => {
    const first = { gateway: "fd75:0:0:301::1" };
    expect(sourceByOrder(hop(undefined, "fd75:0:0:301::82c", first), mp)).toBeUndefined();
    expect(
      sourceByOrder(hop(undefined, "fd75:0:0:301::82c", { table: "100" }), mp),
    ).toBeUndefined();
    expect(sourceByOrder(hop(undefined, "fd75:0:0:300::71a"), mp)).toBeUndefined();
    expect(sourceByOrder(hop("fd75:0:0:999::1", "fd75:0:0:301::82c"), mp)).toBeUndefined();
  });
});
