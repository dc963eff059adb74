/**
 * The whole pod through netagent.v1.Network, with Debian's real CNI plugins:
 * ptp + tuning + sbr (a rule, table 100, an empty main table, sysctls, MTU);
 * two NICs each with sbr (two tables, two rules); the chain added to an
 * already synced guest and removed again. Every result is checked with
 * independent reads of the guest (ip -json rule / route, sysctl files read
 * by `cat` inside the namespace), against the same reads of the pod.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ptpPlugin } from "../helpers/cni-chain";
import { expectMirrorVerdict } from "./complete-helpers";
import { ctl, Guest } from "./helpers";
import { ChainPod, ptpTuningSbr, rules, sysctl, TUNING, tableText } from "./state-helpers";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function setUp(): Promise<{ pod: ChainPod; guest: Guest }> {
  const pod = await ChainPod.create();
  cleanups.push(() => pod.remove());
  const guest = await Guest.create();
  cleanups.push(() => guest.remove());
  return { pod, guest };
}

/** Independent reads that must agree between pod and guest after a sync. */
async function expectMirrored(pod: ChainPod, guest: Guest): Promise<void> {
  expect(await rules(guest.ns)).toEqual(await rules(pod.pod));
  for (const t of ["main", "100", "101"]) {
    expect(await tableText(guest.ns, t), `table ${t}`).toEqual(await tableText(pod.pod, t));
    expect(
      (await tableText(guest.ns, t, "-6")).filter((l) => !l.includes("gst")),
      `table ${t} v6`,
    ).toEqual(await tableText(pod.pod, t, "-6"));
  }
}

const sync = (g: Guest, ns: string, ...extra: string[]) =>
  ctl(["--addr", g.addr, "sync", ...extra, "--netns", ns]);
const diff = (g: Guest, ns: string, ...extra: string[]) =>
  ctl(["--addr", g.addr, "diff", ...extra, "--netns", ns]);

describe("netagentctl with netagent.v1.Network over real CNI chains", () => {
  it("ptp + tuning + sbr: a Kata-only sync leaves it DIFFERENT (never EQUAL); plan; one Apply makes it EQUAL", async () => {
    const { pod, guest } = await setUp();
    await pod.attach(ptpTuningSbr());
    await guest.addNic("gst0", await pod.mac());

    // The Kata sequence cannot carry this pod, and says so.
    const kata = await sync(guest, pod.pod.name, "--kata");
    // What the Kata services cannot carry makes the mirror incomplete: exit 4.
    expect(kata.code, kata.stderr).toBe(4);
    expect(kata.stdout).toContain("not mirrored");
    expect(kata.stdout).toContain("rule 32765: from 10.248.246.146/32 lookup 100");
    expect(kata.stdout).toContain("sysctl net.ipv4.conf.eth0.rp_filter = 2");
    const kataDiff = await diff(guest, pod.pod.name, "--kata");
    expect(kataDiff.code, kataDiff.stdout).toBe(1);
    expect(kataDiff.stdout).not.toContain("verdict: EQUAL");

    const before = await diff(guest, pod.pod.name);
    expect(before.code, before.stdout + before.stderr).toBe(1);
    const out = before.stdout;
    expect(out).toContain("verdict: DIFFERENT");
    expect(out).toMatch(/^< +32765: from 10\.248\.246\.146\/32 lookup 100 +-$/m);
    expect(out).toMatch(/^routes, table 100$/m);
    expect(out).toMatch(/^< +default via 10\.248\.246\.145 dev eth0 +-$/m);
    expect(out).toMatch(
      /^~ +net\.ipv4\.conf\.eth0\.rp_filter = 2 +net\.ipv4\.conf\.eth0\.rp_filter = 0$/m,
    );
    expect(out).toMatch(
      /^~ +net\.ipv4\.conf\.eth0\.arp_ignore = 1 +net\.ipv4\.conf\.eth0\.arp_ignore = 0$/m,
    );
    // The kernel's subnet route the pod does not have (sbr emptied main).
    expect(out).toMatch(
      /^> +- +10\.248\.246\.144\/28 dev eth0 src 10\.248\.246\.146 scope link proto kernel$/m,
    );
    expect(out).toMatch(
      /^~ +eth0 \S+ mtu 1400 up +eth0 \S+ mtu 1400 up$|^= +eth0 \S+ mtu 1400 up/m,
    );

    const plan = await ctl(["--addr", guest.addr, "plan", "--netns", pod.pod.name]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain("add rule 32765: from 10.248.246.146/32 lookup 100");
    expect(plan.stdout).toContain("set net.ipv4.conf.eth0.rp_filter = 2");
    expect(plan.stdout).toMatch(
      /routes, table 100:\n( {2}.*\n)*? {2}add or replace default via 10\.248\.246\.145 dev eth0\n/,
    );
    expect(plan.stdout).toMatch(
      /remove 10\.248\.246\.144\/28 dev eth0 .*\(the kernel's prefix route\)/,
    );
    // A plan changes nothing.
    expect((await diff(guest, pod.pod.name)).code).toBe(1);

    const s = await sync(guest, pod.pod.name);
    expect(s.code, s.stderr).toBe(0);
    expect(s.stdout).toContain("with one Apply (netagent.v1.Network)");

    const after = await diff(guest, pod.pod.name);
    await expectMirrorVerdict(after, pod.pod.name, guest.ns.name);
    await expectMirrored(pod, guest);
    expect(await tableText(guest.ns, "main")).toEqual([]);
    expect(await tableText(guest.ns, "100")).toEqual([
      "default via 10.248.246.145 dev eth0",
      "10.248.246.144/28 via 10.248.246.145 dev eth0 src 10.248.246.146",
      "10.248.246.145 dev eth0 scope link src 10.248.246.146",
    ]);
    expect(await sysctl(guest.ns, "net.ipv4.conf.eth0.rp_filter")).toBe("2");
    expect(await sysctl(guest.ns, "net.ipv4.conf.eth0.arp_ignore")).toBe("1");
    const [link] = await guest.ns.json<{ mtu: number }[]>("link", "show", "eth0");
    expect(link?.mtu).toBe(1400);

    // Idempotent: nothing left to do.
    const again = await ctl(["--addr", guest.addr, "plan", "--netns", pod.pod.name]);
    expect(again.stdout).toContain("nothing to do");
  });
});

describe("netagentctl with netagent.v1.Network over real CNI chains: two NICs, chains changed, another pod, an unreadable pod", () => {
  it("two NICs each with sbr: two tables, two rules", async () => {
    const { pod, guest } = await setUp();
    await pod.attach((d) => [ptpPlugin("10.248.1.0/28", d), { type: "sbr" }], {
      ifname: "eth0",
      name: "net0",
    });
    await pod.attach((d) => [ptpPlugin("10.248.2.0/28", d), { type: "sbr" }], {
      ifname: "eth1",
      name: "net1",
    });
    await guest.addNic("gst0", await pod.mac("eth0"));
    await guest.addNic("gst1", await pod.mac("eth1"));
    expect((await tableText(pod.pod, "101")).length).toBeGreaterThan(0);

    const s = await sync(guest, pod.pod.name);
    expect(s.code, s.stderr).toBe(0);
    const d = await diff(guest, pod.pod.name);
    await expectMirrorVerdict(d, pod.pod.name, guest.ns.name);
    await expectMirrored(pod, guest);
    const r = (await rules(guest.ns)).filter((l) => /"table":"10[01]"/.test(l));
    expect(r).toHaveLength(2);
  });

  it("the chain added to a synced guest, then removed: rules and table 100 come and go", async () => {
    const { pod, guest } = await setUp();
    const ptp = await pod.attach((d) => [ptpPlugin("10.248.3.0/28", d)], { name: "net" });
    await guest.addNic("gst0", await pod.mac());
    expect((await sync(guest, pod.pod.name)).code).toBe(0);
    await expectMirrorVerdict(await diff(guest, pod.pod.name), pod.pod.name, guest.ns.name);
    expect(await tableText(guest.ns, "100")).toEqual([]);

    await pod.attach(() => [TUNING, { type: "sbr" }], {
      name: "net",
      prevResult: ptp.result,
    });
    expect((await diff(guest, pod.pod.name)).code).toBe(1);
    const s1 = await sync(guest, pod.pod.name);
    expect(s1.code, s1.stderr).toBe(0);
    await expectMirrorVerdict(await diff(guest, pod.pod.name), pod.pod.name, guest.ns.name);
    await expectMirrored(pod, guest);
    expect((await rules(guest.ns)).some((l) => l.includes('"table":"100"'))).toBe(true);
    expect(await sysctl(guest.ns, "net.ipv4.conf.eth0.rp_filter")).toBe("2");

    // Removed: the network is wired again with ptp alone. The pod's NIC
    // keeps its MAC (as the guest's NIC is the same), so set it back.
    const mac = await pod.mac();
    for (const c of pod.chains.splice(0).reverse()) await c.detach();
    await pod.attach((d) => [ptpPlugin("10.248.3.0/28", d)], { name: "net" });
    await pod.pod.ip("link", "set", "eth0", "address", mac);
    expect(await rules(pod.pod)).not.toContainEqual(expect.stringContaining('"table":"100"'));
    expect((await diff(guest, pod.pod.name)).code).toBe(1);
    const s2 = await sync(guest, pod.pod.name);
    expect(s2.code, s2.stderr).toBe(0);
    const d2 = await diff(guest, pod.pod.name);
    await expectMirrorVerdict(d2, pod.pod.name, guest.ns.name);
    await expectMirrored(pod, guest);
    expect((await rules(guest.ns)).some((l) => l.includes('"table":"100"'))).toBe(false);
    expect(await tableText(guest.ns, "100")).toEqual([]);
    expect(await sysctl(guest.ns, "net.ipv4.conf.eth0.rp_filter")).toBe(
      await sysctl(pod.pod, "net.ipv4.conf.eth0.rp_filter"),
    );
  });

  it("a guest synced from another pod (other address, no sbr) takes the sbr pod: the kernel's flush of the old routes is no failure", async () => {
    const { pod, guest } = await setUp();
    const other = await ChainPod.create();
    cleanups.push(() => other.remove());
    await other.attach((d) => [ptpPlugin("10.248.4.0/28", d)]);
    await pod.attach(ptpTuningSbr("10.248.5.0/28"));
    await pod.pod.ip("link", "set", "eth0", "address", await other.mac());
    await guest.addNic("gst0", await other.mac());
    expect((await sync(guest, other.pod.name)).code).toBe(0);
    await expectMirrorVerdict(await diff(guest, other.pod.name), other.pod.name, guest.ns.name);

    // Removing the old address makes the kernel drop every IPv4 route of eth0.
    const s = await sync(guest, pod.pod.name);
    expect(s.code, s.stdout + s.stderr).toBe(0);
    const d = await diff(guest, pod.pod.name);
    await expectMirrorVerdict(d, pod.pod.name, guest.ns.name);
    await expectMirrored(pod, guest);
  });

  it("a pod this host cannot read is its own failure, not printed as an agent's status code", async () => {
    // A file that is no namespace: nsenter (on this host) refuses it.
    for (const cmd of ["sync", "diff"]) {
      const r = await ctl(["--addr", "unix:///nonexistent.sock", cmd, "--netns", "/etc/hostname"]);
      expect(r.code, r.stderr).toBe(cmd === "diff" ? 3 : 1);
      expect(r.stderr).toContain("reading netns /etc/hostname on this host:");
      expect(r.stderr).not.toMatch(/INVALID_ARGUMENT|NOT_FOUND|INTERNAL/);
    }
  });
});
