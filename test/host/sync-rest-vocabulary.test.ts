/**
 * Issue 22 item 2, the rest helper's part: what a pod's links, addresses,
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

describe("issue 22 item 2: links, addresses, rules, neighbours, sysctls", () => {
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
});
