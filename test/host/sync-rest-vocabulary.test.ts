/**
 * Sync's vocabulary, the rest helper's part: what a pod's links, addresses,
 * rules, neighbours and sysctls hold beyond names and addresses, mirrored
 * through one Apply by `netagentctl sync`, each checked by independent
 * reads of pod and guest (`ip -n NS -d -j ...`, /proc/sys read inside each
 * namespace).
 */
import { afterEach, describe, expect, it } from "vitest";
import { Netns } from "../helpers/netns";
import { run } from "../helpers/process";
import { ctl, Guest } from "./helpers";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

/** A pod with NIC `name` (its peer in a host namespace of its own) and a guest with its twin. */
async function setUp(name = "eth0"): Promise<{ pod: Netns; guest: Guest }> {
  const host = await Netns.create("n22h");
  cleanups.push(() => host.remove());
  const pod = await Netns.create("n22p");
  cleanups.push(() => pod.remove());
  await pod.veth(name, "peer0", { peerNs: host });
  const [link] = await pod.json<{ address: string }[]>("link", "show", "dev", name);
  const guest = await Guest.create(link?.address);
  cleanups.push(() => guest.remove());
  return { pod, guest };
}

const sync = (g: Guest, pod: Netns) => ctl(["--addr", g.addr, "sync", "--netns", pod.name]);

/** A file under /proc/sys read by a process inside the namespace. */
async function procSys(ns: Netns, path: string): Promise<string> {
  const r = await run("ip", ["netns", "exec", ns.name, "cat", `/proc/sys/${path}`]);
  if (r.code !== 0) throw new Error(`cat /proc/sys/${path} in ${ns.name}: ${r.stderr}`);
  return r.stdout.trim();
}

describe("sync carries links, addresses, rules, neighbours, sysctls", () => {
  it("a sysctl of a NIC whose name has dots (sysctl(8) spells them as slashes)", async () => {
    const { pod, guest } = await setUp("vnic.a-b_c");
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "vnic.a-b_c");
    const w = await run("ip", [
      "netns",
      "exec",
      pod.name,
      "sysctl",
      "-qw",
      "net.ipv4.conf.vnic/a-b_c.rp_filter=2",
    ]);
    expect(w.code, w.stderr).toBe(0);
    const s = await sync(guest, pod);
    expect(s.code, s.stdout + s.stderr).toBe(0);
    const path = "net/ipv4/conf/vnic.a-b_c/rp_filter";
    expect(await procSys(pod, path)).toBe("2");
    expect(await procSys(guest.ns, path)).toBe("2");
  });

  it("rules: ipproto, ports and ranges, uidrange, tos, goto, nop, suppress_*, l3mdev, realms, protocol, an absent iif/oif", async () => {
    const { pod, guest } = await setUp();
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    const v4 = [
      [
        "priority",
        "110",
        "from",
        "10.0.0.0/8",
        "ipproto",
        "tcp",
        "sport",
        "1000-2000",
        "dport",
        "80",
        "lookup",
        "100",
      ],
      ["priority", "111", "uidrange", "1000-2000", "tos", "0x10", "lookup", "100"],
      ["priority", "112", "dsfield", "0x08", "goto", "120"],
      ["priority", "113", "nop"],
      ["priority", "114", "lookup", "main", "suppress_prefixlength", "0"],
      ["priority", "115", "lookup", "main", "suppress_ifgroup", "5"],
      ["priority", "116", "l3mdev"],
      ["priority", "117", "realms", "3/4", "lookup", "100"],
      ["priority", "118", "protocol", "static", "iif", "tun9", "lookup", "100"],
      ["priority", "119", "oif", "nic9", "ipproto", "17", "dport", "53", "lookup", "100"],
      ["priority", "120", "fwmark", "0x10/0xff", "lookup", "100"],
    ];
    for (const r of v4) await pod.ip("rule", "add", ...r);
    await pod.ip(
      "-6",
      "rule",
      "add",
      "priority",
      "121",
      "from",
      "fd00::/8",
      "ipproto",
      "ipv6-icmp",
      "lookup",
      "100",
    );
    await pod.ip(
      "-6",
      "rule",
      "add",
      "priority",
      "122",
      "sport",
      "5",
      "protocol",
      "bgp",
      "blackhole",
    );
    const s = await sync(guest, pod);
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(s.stdout).not.toContain("not mirrored");
    for (const fam of [[], ["-6"]]) {
      const read = (ns: Netns) => ns.json<unknown[]>(...fam, "rule", "show");
      expect(await read(guest.ns), `rules ${fam.join("")}`).toEqual(await read(pod));
    }
  });
});
