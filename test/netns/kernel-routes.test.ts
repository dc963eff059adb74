/**
 * impliedKernelRoutes against the kernel itself: each address shape is made
 * with a real `ip -n NS addr add` in a fresh namespace, the links are read
 * with `ip -json addr` into the model, and the inferred routes are compared
 * with the `proto kernel` routes the kernel really made in the main table,
 * read with `ip -json route` and compared as ip prints them (not through the
 * agent's route parser).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Route } from "../../src/net/model/model";
import { parseLinks } from "../../src/net/parse/parse-ip-json";
import { impliedKernelRoutes } from "../../src/net/plan/kernel-routes";
import { Netns } from "../helpers/netns";
import { waitFor } from "../helpers/wait";

interface IpRoute {
  dst: string;
  dev?: string;
  prefsrc?: string;
  scope?: string;
  metric?: number;
  protocol?: string;
}

const SCOPE_NAMES: Record<number, string> = { 0: "global", 253: "link", 254: "host" };

/** A route as `ip -json route` prints its fields: host routes without /32 or /128. */
function text(r: { dst: string; dev?: string; prefsrc?: string; scope: string; metric: number }) {
  return `${r.dst} dev ${r.dev} src ${r.prefsrc ?? "-"} scope ${r.scope} metric ${r.metric}`;
}

function inferredText(r: Route): string {
  const dst = r.dst.replace(r.family === 4 ? /\/32$/ : /\/128$/, "");
  return text({ ...r, dst, scope: SCOPE_NAMES[r.scope] ?? String(r.scope) });
}

/** What the kernel made and what is inferred from the links, both as sorted text. */
async function kernelAndInferred(ns: Netns): Promise<{ kernel: string[]; inferred: string[] }> {
  const links = parseLinks(await ns.json("addr", "show"));
  const made: IpRoute[] = [
    ...(await ns.json<IpRoute[]>("route", "show", "table", "main")),
    ...(await ns.json<IpRoute[]>("-6", "route", "show", "table", "main")),
  ];
  const kernel = made
    .filter((r) => r.protocol === "kernel" && r.dev !== "lo")
    .map((r) => text({ ...r, scope: r.scope ?? "global", metric: r.metric ?? 0 }))
    .sort();
  return { kernel, inferred: impliedKernelRoutes(links).map(inferredText).sort() };
}

let ns: Netns | undefined;
afterEach(async () => {
  await ns?.remove();
  ns = undefined;
});

/**
 * A namespace with veth e0 (up, peer up: carrier) and veth e1 (up, peer
 * down: no carrier), then `addrs` as `ip addr add` argument lists.
 */
async function setUp(addrs: string[][]): Promise<Netns> {
  const n = await Netns.create("nt-kroutes");
  ns = n;
  await n.veth("e0", "e0p");
  // An address added before the kernel has seen e0's carrier stays tentative
  // (its routes not made yet) until linkwatch runs, which under load can be
  // after two reads agree: wait for operstate UP first.
  await waitFor(
    async () =>
      (await n.json<{ operstate: string }[]>("link", "show", "e0"))[0]?.operstate === "UP" ||
      undefined,
    { what: "e0's carrier" },
  );
  await n.ip("link", "add", "e1", "type", "veth", "peer", "name", "e1p");
  await n.ip("link", "set", "e1", "up");
  await n.ip("link", "add", "e2", "type", "veth", "peer", "name", "e2p");
  for (const a of addrs) await n.ip("addr", "add", ...a);
  return n;
}

/** Reads until two reads in a row agree: link-local addresses and DAD settle on their own. */
async function settled(n: Netns) {
  let last = "";
  return waitFor(async () => {
    const now = await kernelAndInferred(n);
    const key = JSON.stringify(now);
    if (key === last) return now;
    last = key;
    return undefined;
  });
}

describe("impliedKernelRoutes matches the routes the kernel makes", () => {
  it.each<[string, string[][]]>([
    ["IPv4 /24", [["10.1.1.2/24", "dev", "e0"]]],
    ["IPv4 /32 (no prefix route)", [["10.65.0.11/32", "dev", "e0"]]],
    ["IPv4 /31", [["10.6.6.6/31", "dev", "e0"]]],
    ["IPv4 /8 with host bits", [["10.200.3.4/8", "dev", "e0"]]],
    ["IPv4 peer /32", [["10.0.0.1", "peer", "10.0.0.2/32", "dev", "e0"]]],
    ["IPv4 peer with a prefix", [["10.3.0.1", "peer", "10.9.0.5/24", "dev", "e0"]]],
    [
      "IPv4 secondary in the same subnet",
      [
        ["10.1.1.2/24", "dev", "e0"],
        ["10.1.1.3/24", "dev", "e0"],
        ["10.2.0.1/16", "dev", "e0"],
      ],
    ],
    ["IPv4 noprefixroute", [["10.12.0.1/24", "dev", "e0", "noprefixroute"]]],
    ["IPv4 with a route metric", [["10.2.2.2/24", "dev", "e0", "metric", "50"]]],
    [
      "IPv4 same subnet on two links",
      [
        ["10.7.7.1/24", "dev", "e0"],
        ["10.7.7.2/24", "dev", "e1"],
      ],
    ],
    ["IPv4 on a link without carrier", [["10.8.8.8/24", "dev", "e1"]]],
    ["IPv4 on a down link", [["10.4.4.4/24", "dev", "e2"]]],
    ["IPv6 /64", [["fd00:1::2/64", "dev", "e0", "nodad"]]],
    // The Calico dual-stack shape.
    ["IPv6 /128", [["fd00:10:65::11/128", "dev", "e0", "nodad"]]],
    ["IPv6 /64 with DAD", [["fd00:13::1/64", "dev", "e0"]]],
    ["IPv6 peer", [["fd00:1::1", "peer", "fd00:1::2", "dev", "e0", "nodad"]]],
    ["IPv6 peer with a prefix", [["fd00:3::1/64", "peer", "fd00:4::/64", "dev", "e0", "nodad"]]],
    [
      "IPv6 two addresses in one /64, one with a metric",
      [
        ["fd00:2::1/64", "dev", "e0", "nodad", "metric", "77"],
        ["fd00:2::2/64", "dev", "e0", "nodad"],
        ["fd00:2::3/64", "dev", "e0", "nodad"],
      ],
    ],
    ["IPv6 noprefixroute", [["fd00:12::1/64", "dev", "e0", "noprefixroute", "nodad"]]],
    [
      "peers with noprefixroute",
      [
        ["10.0.0.1", "peer", "10.0.0.2/32", "dev", "e0", "noprefixroute"],
        ["fd00:1::1", "peer", "fd00:1::2", "dev", "e0", "nodad", "noprefixroute"],
      ],
    ],
    ["IPv4 peer that is the address itself", [["10.0.0.1", "peer", "10.0.0.1/32", "dev", "e0"]]],
    ["IPv4 peer with a metric", [["10.0.0.1", "peer", "10.0.0.2/32", "dev", "e0", "metric", "9"]]],
    [
      "IPv6 peer with a metric",
      [["fd00:1::1", "peer", "fd00:1::2", "dev", "e0", "nodad", "metric", "9"]],
    ],
    ["IPv6 /128 without carrier", [["fd00:9::10/128", "dev", "e1", "nodad"]]],
    ["IPv6 on a down link", [["fd00:5::5/64", "dev", "e2", "nodad"]]],
    [
      "everything on one link at once",
      [
        ["10.65.0.11/32", "dev", "e0"],
        ["10.1.1.2/24", "dev", "e0"],
        ["10.1.1.3/24", "dev", "e0"],
        ["10.0.0.1", "peer", "10.0.0.2/32", "dev", "e0"],
        ["fd00:10:65::11/128", "dev", "e0", "nodad"],
        ["fd00:1::1", "peer", "fd00:1::2", "dev", "e0", "nodad"],
        ["fd00:2::1/64", "dev", "e0", "nodad"],
      ],
    ],
  ])("%s", async (_, addrs) => {
    const { kernel, inferred } = await settled(await setUp(addrs));
    expect(inferred).toEqual(kernel);
  });

  it("the Calico shape, concretely: the /128 route is inferred", async () => {
    const { kernel, inferred } = await settled(
      await setUp([
        ["10.65.0.11/32", "dev", "e0"],
        ["fd00:10:65::11/128", "dev", "e0", "nodad"],
      ]),
    );
    expect(kernel).toContain("fd00:10:65::11 dev e0 src - scope global metric 256");
    expect(inferred).toEqual(kernel);
  });
});
