/**
 * Sysctls test/podgen found left behind by sync: a link's IPv6
 * MTU set apart from its MTU (`net.ipv6.conf.IF.mtu`, which the kernel
 * otherwise derives from the link's MTU), and two namespaced keys the agent
 * did not manage (`net.ipv4.fib_multipath_use_neigh`,
 * `net.unix.max_dgram_qlen`). Each pod synced, then /proc/sys read inside
 * both namespaces by a process of their own.
 */
import { afterEach, expect, it } from "vitest";
import { Netns } from "../helpers/netns";
import { run } from "../helpers/process";
import { ctl, Guest } from "./helpers";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

/** A pod with eth0 (with 10.1.0.2/24 unless `bare`) and a guest with its MAC. */
async function setUp(bare = false): Promise<{ pod: Netns; guest: Guest }> {
  const host = await Netns.create("n22s");
  cleanups.push(() => host.remove());
  const pod = await Netns.create("n22q");
  cleanups.push(() => pod.remove());
  await pod.veth("eth0", "peer0", { peerNs: host });
  if (!bare) await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
  const [link] = await pod.json<{ address: string }[]>("link", "show", "dev", "eth0");
  const guest = await Guest.create(link?.address);
  cleanups.push(() => guest.remove());
  return { pod, guest };
}

async function inNs(ns: Netns, ...argv: string[]): Promise<string> {
  const r = await run("ip", ["netns", "exec", ns.name, ...argv]);
  if (r.code !== 0) throw new Error(`${argv.join(" ")} in ${ns.name}: ${r.stderr}`);
  return r.stdout.trim();
}

/** Each of `paths` (under /proc/sys) reads the same in the guest as in the pod. */
async function expectSame(pod: Netns, guest: Guest, paths: readonly string[]): Promise<void> {
  for (const p of paths) {
    expect(await inNs(guest.ns, "cat", `/proc/sys/${p}`), p).toBe(
      await inNs(pod, "cat", `/proc/sys/${p}`),
    );
  }
}

const PATHS = [
  "net/ipv6/conf/eth0/mtu",
  "net/ipv4/fib_multipath_use_neigh",
  "net/unix/max_dgram_qlen",
] as const;

it("a link's IPv6 MTU set apart from its MTU, fib_multipath_use_neigh and unix max_dgram_qlen are mirrored", async () => {
  const { pod, guest } = await setUp();
  await pod.ip("link", "set", "eth0", "mtu", "1450");
  await inNs(pod, "sysctl", "-qw", "net.ipv6.conf.eth0.mtu=1389");
  await inNs(pod, "sysctl", "-qw", "net.ipv4.fib_multipath_use_neigh=1");
  await inNs(pod, "sysctl", "-qw", "net.unix.max_dgram_qlen=757");
  const s = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
  expect(s.code, s.stdout + s.stderr).toBe(0);
  await expectSame(pod, guest, PATHS);
  expect(await inNs(guest.ns, "cat", "/proc/sys/net/ipv6/conf/eth0/mtu")).toBe("1389");
  expect(await inNs(guest.ns, "cat", "/sys/class/net/eth0/mtu")).toBe("1450");
});

it("an IPv6 MTU that follows the link's MTU is not written: the sync stays as it was", async () => {
  const { pod, guest } = await setUp();
  await pod.ip("link", "set", "eth0", "mtu", "1400");
  const s = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
  expect(s.code, s.stdout + s.stderr).toBe(0);
  expect(s.stdout).toMatch(/0 sysctl writes/);
  expect(await inNs(guest.ns, "cat", "/proc/sys/net/ipv6/conf/eth0/mtu")).toBe("1400");
});

it("forwarding on for the namespace, then off on a link: the link's stays off (a namespace-wide write sets every link's)", async () => {
  const { pod, guest } = await setUp();
  await inNs(pod, "sysctl", "-qw", "net.ipv4.ip_forward=1");
  await inNs(pod, "sysctl", "-qw", "net.ipv4.conf.eth0.forwarding=0");
  await inNs(pod, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1");
  await inNs(pod, "sysctl", "-qw", "net.ipv6.conf.eth0.forwarding=0");
  const s = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
  expect(s.code, s.stdout + s.stderr).toBe(0);
  await expectSame(pod, guest, [
    "net/ipv4/ip_forward",
    "net/ipv4/conf/eth0/forwarding",
    "net/ipv4/conf/default/forwarding",
    "net/ipv6/conf/all/forwarding",
    "net/ipv6/conf/eth0/forwarding",
    "net/ipv6/conf/default/forwarding",
  ]);
  expect(await inNs(guest.ns, "cat", "/proc/sys/net/ipv4/conf/eth0/forwarding")).toBe("0");
});

it("an IPv4 default set, then a link's set back (rp_filter): the link's stays (a default's write sets every link not set itself)", async () => {
  // A link that never had an IPv4 address: the kernel marks every key of a
  // link as set once it gets one, and a default's write passes it by.
  const { pod, guest } = await setUp(true);
  await inNs(pod, "sysctl", "-qw", "net.ipv4.conf.default.rp_filter=1");
  await inNs(pod, "sysctl", "-qw", "net.ipv4.conf.eth0.rp_filter=0");
  await inNs(pod, "sysctl", "-qw", "net.ipv4.conf.default.arp_ignore=2");
  const s = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
  expect(s.code, s.stdout + s.stderr).toBe(0);
  await expectSame(pod, guest, [
    "net/ipv4/conf/default/rp_filter",
    "net/ipv4/conf/eth0/rp_filter",
    "net/ipv4/conf/default/arp_ignore",
    "net/ipv4/conf/eth0/arp_ignore",
  ]);
});
