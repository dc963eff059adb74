/**
 * sync from a CNI result file instead of a namespace: a 1.0.0 result as
 * ptp writes it (gateway inside the subnet), and a 0.4.0 result with a /32
 * address and a gateway outside it (Calico style), which needs the
 * link-scope host route to the gateway first.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ctl, Guest, randomMac, tempDir, userRoutes, waitFor, writeJson } from "./helpers";

/**
 * The guest's eth0 once its kernel link-local is there and out of DAD: the
 * diff leaves out the kernel's fe80::/64 by that address, and at load the
 * route showed before the address did (1 of 3 runs at load 1).
 */
async function settled(guest: Guest): Promise<void> {
  await waitFor(
    async () => {
      const [link] = await guest.ns.json<{ addr_info: { local: string; tentative?: boolean }[] }[]>(
        "addr",
        "show",
        "eth0",
      );
      const info = link?.addr_info ?? [];
      return info.some((a) => a.local.startsWith("fe80:")) && !info.some((a) => a.tentative);
    },
    { what: "eth0's link-local out of DAD", timeoutMs: 20_000 },
  );
}

describe("sync --cni-result", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(result: (mac: string) => unknown) {
    const mac = randomMac();
    const guest = await Guest.create(mac, "cni7");
    cleanups.push(() => guest.remove());
    const dir = tempDir();
    cleanups.push(() => dir.remove());
    return { guest, file: writeJson(dir, "result.json", result(mac)), mac };
  }

  it("1.0.0 result (ptp's shape): interface, address, default route; diff equal", async () => {
    const { guest, file, mac } = await setup((mac) => ({
      cniVersion: "1.0.0",
      interfaces: [
        { name: "veth1234", mac: "0a:00:00:00:00:01" },
        { name: "eth0", mac: mac.toUpperCase(), sandbox: "/run/netns/whatever" },
      ],
      ips: [{ interface: 1, address: "10.248.246.150/28", gateway: "10.248.246.145" }],
      routes: [{ dst: "0.0.0.0/0" }],
      dns: {},
    }));
    const sync = await ctl(["--addr", guest.addr, "sync", "--cni-result", file]);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toContain(`interface eth0 ${mac} `);
    expect(sync.stdout).toContain("skipped veth1234: not in the sandbox (host side)");

    await settled(guest);
    const diff = await ctl(["--addr", guest.addr, "diff", "--cni-result", file]);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);
    expect(diff.stdout).toContain("verdict: EQUAL (1 interface, 1 route)");

    const [link] = await guest.ns.json<{ address: string; addr_info: { local: string }[] }[]>(
      "addr",
      "show",
      "eth0",
    );
    expect(link?.address).toBe(mac);
    expect(link?.addr_info.map((a) => a.local)).toContain("10.248.246.150");
    expect(await userRoutes(guest.ns)).toEqual([
      { dst: "default", gateway: "10.248.246.145", dev: "eth0" },
    ]);
  });

  it("0.4.0 result with a /32 address: host route to the gateway first, then the default", async () => {
    const { guest, file } = await setup((mac) => ({
      cniVersion: "0.4.0",
      interfaces: [{ name: "eth0", mac, sandbox: "/proc/1/ns/net" }],
      ips: [
        { version: "4", interface: 0, address: "192.0.2.7/32", gateway: "169.254.1.1" },
        { version: "6", interface: 0, address: "2001:db8:7::7/64", gateway: "2001:db8:7::1" },
      ],
      routes: [
        { dst: "0.0.0.0/0" },
        { dst: "::/0" },
        { dst: "198.51.100.0/24", gw: "169.254.1.1" },
      ],
    }));
    const sync = await ctl(["--addr", guest.addr, "--json", "sync", "--cni-result", file]);
    expect(sync.code, sync.stderr).toBe(0);
    expect(JSON.parse(sync.stdout).routesSent).toBe(4);

    await settled(guest);
    const diff = await ctl(["--addr", guest.addr, "diff", "--cni-result", file]);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);

    const routes = await userRoutes(guest.ns);
    expect(routes).toContainEqual({
      dst: "169.254.1.1",
      dev: "eth0",
      prefsrc: "192.0.2.7",
      scope: "link",
    });
    expect(routes).toContainEqual({ dst: "default", gateway: "169.254.1.1", dev: "eth0" });
    expect(routes).toContainEqual({ dst: "198.51.100.0/24", gateway: "169.254.1.1", dev: "eth0" });
    expect(routes).toContainEqual({ dst: "default", gateway: "2001:db8:7::1", dev: "eth0" });
  });
});
