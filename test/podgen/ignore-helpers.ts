/**
 * What the tests of the ignore list (ignore.test.ts and the ignore-*.ts
 * entries it runs) share: the scratch namespaces, the record of the
 * entries tested, and the reads and setups several entries use.
 */
import { expect } from "vitest";
import { run } from "../helpers/process";
import { waitFor } from "../helpers/wait";
import { ipOk } from "./build";
import { compareReads } from "./compare";
import { IGNORED } from "./ignore";
import { normalise } from "./normalise";
import { type Json, type NetnsRead, readNetns } from "./read";
import { Scratch } from "./scratch";

export const scratch = new Scratch();

export const tested: string[] = [];
export const entry = (id: keyof typeof IGNORED) => {
  tested.push(id);
  return `${id}: ${IGNORED[id].what}`;
};

export const MAC = "02:5a:00:00:00:01";
export const link = (r: NetnsRead, name = "eth0") => r.links.find((l) => l.ifname === name) as Json;
export const addrs = (r: NetnsRead, name = "eth0") =>
  (r.addresses.find((l) => l.ifname === name)?.addr_info ?? []) as Json[];
export const fieldsOf = (r: NetnsRead, key: string) =>
  normalise(r).objects.find((o) => o.key === key)?.fields;

/**
 * Two netns alike (eth0 at SUBNET.2/24, its peer at .1, ARP on or off); a
 * datagram from A to the peer makes the kernel add a neighbour entry that
 * `made` recognises, in A alone; the comparison does not report it.
 */
export async function entryMadeInAOnly(
  o: { subnet: string; arp: boolean; what: string },
  made: (n: Json) => boolean,
): Promise<void> {
  const [a, b] = [await scratch.withVeth(MAC), await scratch.withVeth(MAC)];
  const peerAddr = `${o.subnet}.1`;
  for (const { ns, peer } of [a, b]) {
    if (!o.arp) await ipOk("-n", ns, "link", "set", "eth0", "arp", "off");
    await ipOk("-n", ns, "address", "add", `${o.subnet}.2/24`, "dev", "eth0");
    await ipOk("-n", peer, "address", "add", `${peerAddr}/24`, "dev", "p0");
  }
  const sent = await run("ip", [
    "netns",
    "exec",
    a.ns,
    "bash",
    "-c",
    `echo x >/dev/udp/${peerAddr}/9`,
  ]);
  expect(sent.code, sent.stderr).toBe(0);
  await waitFor(
    async () => {
      const [n] = await json(a.ns, "neigh", "show", "nud", "all", peerAddr, "dev", "eth0");
      return n !== undefined && made(n);
    },
    { what: o.what },
  );
  const ra = await readNetns(a.ns);
  const rb = await readNetns(b.ns);
  expect(rb.neighbours.find((n) => n.dst === peerAddr)).toBeUndefined();
  expect(compareReads(ra, rb)).toEqual([]);
}

export const json = async (ns: string, ...args: string[]) =>
  JSON.parse((await ipOk("-n", ns, "-j", ...args)) || "[]") as Json[];

/** eth0's addresses by one `ip -j` (the polls need no complete read). */
export async function eth0Addrs(ns: string): Promise<Json[]> {
  const [l] = JSON.parse(await ipOk("-n", ns, "-j", "address", "show", "dev", "eth0")) as Json[];
  return (l?.addr_info ?? []) as Json[];
}

/** Waits for the kernel's link-local on eth0 to be there and past DAD (then its local route is too). */
export function linkLocal(ns: string) {
  return waitFor(
    async () =>
      (await eth0Addrs(ns)).some((x) => String(x.local).startsWith("fe80:") && !x.tentative),
    {
      what: "the kernel's link-local",
    },
  );
}

/** A: a veth with MAC; B: a tap device with the same MAC (another device type). */
export async function vethAndTap(): Promise<{ ra: NetnsRead; rb: NetnsRead }> {
  const a = await scratch.withVeth(MAC);
  const b = await scratch.netns();
  await ipOk("-n", b, "tuntap", "add", "dev", "eth0", "mode", "tap");
  await ipOk("-n", b, "link", "set", "eth0", "address", MAC, "up");
  return { ra: await readNetns(a.ns), rb: await readNetns(b) };
}
