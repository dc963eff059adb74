/**
 * The kernel's own consequences of a step are part of the plan: IPv6
 * disabled on a link takes its IPv6 addresses and routes (the link-local
 * and fe80::/64 among them), and enabled again brings the link-local back;
 * a link down has no link-local. No step of a sync fails because the
 * kernel already did it, and the guest ends as the pod: judged by the
 * guest's own `ip -j` reads against the pod's and by the independent
 * complete comparison (test/podgen).
 */
import { describe, expect, it } from "vitest";
import { run } from "../helpers/process";
import { waitFor } from "../helpers/wait";
import { pairsPerTest } from "./complete-helpers";
import type { Netns } from "./helpers";

const { pair } = pairsPerTest();

async function sysctl(ns: Netns, setting: string): Promise<void> {
  const r = await run("ip", ["netns", "exec", ns.name, "sysctl", "-w", setting]);
  if (r.code !== 0) throw new Error(`sysctl -w ${setting}: ${r.stderr}`);
}

/** The link's IPv6 addresses and its IPv6 routes of every table, as `ip -6 -j` shows them. */
async function ipv6(ns: Netns, dev: string): Promise<string[]> {
  const addrs = await ns.json<{ addr_info?: { local: string; prefixlen: number }[] }[]>(
    "-6",
    "addr",
    "show",
    "dev",
    dev,
  );
  const routes = await ns.json<{ dst: string; type?: string; table?: string }[]>(
    "-6",
    "route",
    "show",
    "table",
    "all",
    "dev",
    dev,
  );
  return [
    ...addrs.flatMap((l) => (l.addr_info ?? []).map((a) => `addr ${a.local}/${a.prefixlen}`)),
    ...routes.map((r) => `route ${r.type ?? "unicast"} ${r.dst} ${r.table ?? "main"}`),
  ].sort();
}

/**
 * Writes `dev`'s stable_secret (which sets addr_gen_mode 2; the mode without a secret is
 * EINVAL) with the link down: the kernel makes a link-local when it sees the carrier, and
 * whether that came before the write (an EUI-64 one) must not be left to chance. Returns
 * once the link's one link-local is made, stable-privacy, past detection: settled.
 */
async function stableSecret(ns: Netns, dev: string, secret: string): Promise<void> {
  await ns.ip("link", "set", dev, "down");
  await sysctl(ns, `net.ipv6.conf.${dev}.stable_secret=${secret}`);
  await ns.ip("link", "set", dev, "up");
  await waitFor(
    async () => {
      const text = await ns.ip("-6", "addr", "show", "dev", dev);
      return /inet6 fe80:.*stable-privacy/.test(text) && !text.includes("tentative");
    },
    { what: `${dev}'s stable-privacy link-local past duplicate address detection` },
  );
}

describe("the kernel's own consequences of a step", () => {
  it("IPv6 disabled on the pod's link: synced (exit 0), the guest's link has no IPv6 either; enabled again: synced", async () => {
    const p = await pair();
    await p.pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await p.pod.ip("-6", "addr", "add", "fd00:1::2/64", "dev", "eth0");
    let s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await ipv6(p.guest.ns, "eth0")).toContain("addr fd00:1::2/64");
    await sysctl(p.pod, "net.ipv6.conf.eth0.disable_ipv6=1");
    expect(await ipv6(p.pod, "eth0")).toEqual([]);
    s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await ipv6(p.guest.ns, "eth0")).toEqual([]);
    expect(await p.judge()).toEqual([]);
    await sysctl(p.pod, "net.ipv6.conf.eth0.disable_ipv6=0");
    await p.pod.ip("-6", "addr", "add", "fd00:1::2/64", "dev", "eth0");
    s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await ipv6(p.guest.ns, "eth0")).toContain("addr fd00:1::2/64");
  });

  it("IPv6 disabled on a link the sync also renames (the kernel makes fe80::/64 again when it comes up): synced, exit 0", async () => {
    const p = await pair();
    await p.pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await sysctl(p.pod, "net.ipv6.conf.eth0.disable_ipv6=1");
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await ipv6(p.guest.ns, "eth0")).toEqual([]);
    expect(await p.judge()).toEqual([]);
  });

  it("a link down in the pod: the guest's is down, with the pod's addresses and no link-local", async () => {
    const p = await pair();
    await p.pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await p.pod.ip("-6", "addr", "add", "fd00:1::2/64", "dev", "eth0");
    let s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    await p.pod.ip("link", "set", "eth0", "down");
    s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    const link = async (ns: Netns) =>
      (await ns.json<{ flags: string[] }[]>("link", "show", "eth0"))[0];
    expect((await link(p.guest.ns))?.flags).not.toContain("UP");
    expect(await ipv6(p.guest.ns, "eth0")).toEqual(await ipv6(p.pod, "eth0"));
    expect((await ipv6(p.guest.ns, "eth0")).filter((x) => x.includes("fe80"))).toEqual([]);
    expect(await p.judge()).toEqual([]);
  });

  it("a link down with another address generation mode: the sysctl write makes no link-local the pod lacks", async () => {
    const p = await pair();
    await p.pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    // Writing addr_gen_mode makes the kernel generate the link's link-local again, up or not.
    await sysctl(p.pod, "net.ipv6.conf.eth0.addr_gen_mode=3");
    await p.pod.ip("link", "set", "eth0", "down");
    expect(await ipv6(p.pod, "eth0")).toEqual([]);
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await ipv6(p.guest.ns, "eth0")).toEqual([]);
    // Mode 3 (random): the kernel drew the link's stable_secret; it is mirrored as it is.
    expect(await p.judge()).toEqual([]);
  });

  it("an IPv6 address added to a link that stays down: tentative in the guest too, no local route", async () => {
    const p = await pair();
    await p.pod.ip("link", "set", "eth0", "down");
    await p.pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await p.pod.ip("-6", "addr", "add", "fd00:1::2/64", "dev", "eth0");
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await ipv6(p.guest.ns, "eth0")).toEqual(await ipv6(p.pod, "eth0"));
    expect(await ipv6(p.guest.ns, "eth0")).toEqual(["addr fd00:1::2/64"]);
    expect(await p.judge()).toEqual([]);
  });

  it("an IPv6 address added with nodad to a link that stays down: usable in the guest too, with its local route", async () => {
    const p = await pair();
    await p.pod.ip("link", "set", "eth0", "down");
    await p.pod.ip("-6", "addr", "add", "fd00:1::2/64", "nodad", "dev", "eth0");
    await p.pod.ip("-6", "addr", "add", "fd00:2::2/64", "dev", "eth0");
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(await ipv6(p.guest.ns, "eth0")).toEqual(await ipv6(p.pod, "eth0"));
    expect(await ipv6(p.guest.ns, "eth0")).toContain("route local fd00:1::2 local");
    expect(await p.judge()).toEqual([]);
  });

  it("a link's stable_secret (addr_gen_mode 2, stable privacy): mirrored, and the guest's link-local is the pod's", async () => {
    const p = await pair();
    await stableSecret(p.pod, "eth0", "2001:db8:1:2:3:4:5:6");
    await p.pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    const linkLocal = async (ns: Netns) =>
      (await ipv6(ns, "eth0")).filter((x) => x.startsWith("addr fe80:"));
    expect(await linkLocal(p.pod)).toHaveLength(1);
    expect(await linkLocal(p.guest.ns)).toEqual(await linkLocal(p.pod));
    expect(await p.judge()).toEqual([]);
  });
});
