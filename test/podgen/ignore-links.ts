/**
 * The ignore list's entries about links (ignore.test.ts runs them): index,
 * device, qdisc, and carrier with the routes and lookups it decides.
 */
import { expect, it } from "vitest";
import { waitFor } from "../helpers/wait";
import { ipOk } from "./build";
import { compareReads } from "./compare";
import { IGNORED } from "./ignore";
import { entry, fieldsOf, json, link, MAC, scratch, vethAndTap } from "./ignore-helpers";
import { explained, lookup } from "./lookups";
import { readNetns } from "./read";

/** Index, device type and qdisc: two netns that differ in those alone. */
export function linkEntries(): void {
  it(entry("linkIndex"), async () => {
    const a = await scratch.withVeth(MAC);
    const b = await scratch.netns();
    const bPeer = await scratch.netns();
    // B made another pair first: its NIC and the NIC's peer get other indexes.
    await ipOk("-n", b, "link", "add", "x0", "type", "veth", "peer", "name", "x1", "netns", bPeer);
    await ipOk(
      "-n",
      b,
      "link",
      "add",
      "eth0",
      "address",
      MAC,
      "type",
      "veth",
      "peer",
      "name",
      "p0",
      "netns",
      bPeer,
    );
    await ipOk("-n", bPeer, "link", "set", "p0", "up");
    await ipOk("-n", b, "link", "set", "eth0", "up");
    // As withVeth does for A: B's carrier (operstate UP) comes a moment later (linkwatch).
    // Compared before it, the two differ in operstate, which is no ignored field.
    await waitFor(
      async () =>
        (
          JSON.parse(await ipOk("-n", b, "-j", "link", "show", "eth0")) as { operstate: string }[]
        )[0]?.operstate === "UP",
      { what: "eth0 in B with carrier" },
    );
    const [ra, rb] = [await readNetns(a.ns), await readNetns(b)];
    expect(link(ra).ifindex).not.toEqual(link(rb).ifindex);
    expect(link(ra).link_index).not.toEqual(link(rb).link_index);
    expect(fieldsOf(ra, `mac ${MAC}`)).toEqual(fieldsOf(rb, `mac ${MAC}`));
  });

  it(entry("linkDevice"), async () => {
    const { ra, rb } = await vethAndTap();
    expect(link(ra).linkinfo).not.toEqual(link(rb).linkinfo);
    const kept = [...(fieldsOf(rb, `mac ${MAC}`)?.keys() ?? [])];
    expect(
      kept.filter((k) => IGNORED.linkDevice.fields.some((f) => k === f || k.startsWith(`${f}.`))),
    ).toEqual([]);
  });

  it(entry("linkQdisc"), async () => {
    const { ra, rb } = await vethAndTap();
    expect([link(ra).qdisc, link(rb).qdisc]).toEqual(["noqueue", "pfifo_fast"]);
    expect(fieldsOf(rb, `mac ${MAC}`)?.has("qdisc")).toBe(false);
  });
}

/** Carrier: a link without it, its routes and the lookups through it. */
export function carrierEntries(): void {
  it(`${entry("linkCarrier")}; ${entry("routeCarrier")}; ${entry("routeCarrierOnly")}; ${entry("lookupCarrierOnly")}`, async () => {
    // A: a bridge without ports (no carrier); B: a veth whose peer is up. Configured alike.
    const a = await scratch.netns();
    const b = await scratch.netns();
    const bPeer = await scratch.netns();
    const mac = "02:5a:00:00:00:c1";
    await ipOk("-n", a, "link", "add", "c0", "address", mac, "type", "bridge");
    await ipOk(
      "-n",
      b,
      "link",
      "add",
      "c0",
      "address",
      mac,
      "type",
      "veth",
      "peer",
      "name",
      "p0",
      "netns",
      bPeer,
    );
    await ipOk("-n", bPeer, "link", "set", "p0", "up");
    for (const ns of [a, b]) {
      await ipOk("-n", ns, "addr", "add", "10.77.0.2/24", "dev", "c0");
      await ipOk("-n", ns, "-6", "addr", "add", "fd00:77::2/64", "dev", "c0");
      await ipOk("-n", ns, "link", "set", "c0", "up");
      await ipOk("-n", ns, "route", "add", "10.78.0.0/16", "via", "10.77.0.1", "dev", "c0");
    }
    const local6 = async (ns: string) =>
      (await json(ns, "-6", "route", "show", "table", "local", "dev", "c0")).map(
        (r) => `${String(r.type)} ${String(r.dst)}`,
      );
    await waitFor(async () => (await local6(b)).includes("local fd00:77::2"), {
      what: "B's local route of fd00:77::2 (DAD over)",
    });
    const [ra, rb] = [await readNetns(a), await readNetns(b)];
    expect(link(ra, "c0").flags).toContain("NO-CARRIER");
    expect(link(rb, "c0").flags).toContain("LOWER_UP");
    expect(link(ra, "c0").operstate).not.toBe(link(rb, "c0").operstate);
    const [route] = await json(a, "route", "show", "10.78.0.0/16");
    expect(route?.flags).toContain("linkdown");
    expect(await local6(a)).not.toContain("local fd00:77::2");
    // lookupCarrierOnly: B answers a multicast lookup from its ff00::/8, A has none.
    const probe = { args: ["-6", "route", "get", "ff0e::5", "iif", "c0"] };
    const [la, lb] = [await lookup(a, probe), await lookup(b, probe)];
    expect(lb).toMatch(/^type multicast dev c0 table local/);
    expect(la).not.toBe(lb);
    const carrier = { pod: new Map([["c0", false]]), guest: new Map([["c0", true]]) };
    expect(explained(probe, la, lb, carrier)).toBe("lookupCarrierOnly");
    // The kernel's own link-local and fe80::/64 of B are other entries' (or the agent's).
    const differences = compareReads(ra, rb).filter((d) => !/fe80::\/64/.test(d.what));
    expect(differences).toEqual([]);
  });
}
