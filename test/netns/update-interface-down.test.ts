/**
 * UpdateInterface when a rename takes links down: the kernel drops a link's
 * IPv6 addresses when it goes down (unless keep_addr_on_down is set) and
 * when its MTU falls below 1280. Checked against the real kernel with an
 * independent `ip -n NS -json addr show`.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { Network } from "../../src/gen/network_pb";
import { IPFamily } from "../../src/gen/types_pb";
import { swapName } from "../../src/net/plan/plan-link";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import type { RunningAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { run } from "../helpers/process";

interface IpLink {
  ifindex: number;
  ifname: string;
  address: string;
  mtu: number;
  flags: string[];
  addr_info: { local: string; prefixlen: number; scope: string; tentative?: boolean }[];
}

const MAC = "02:00:00:00:06:01";
const HOLDER_MAC = "02:00:00:00:06:02";
let guest: Netns;
let wire: Netns;
let agent: RunningAgent;
let client: AgentClient;

beforeEach(async () => {
  guest = await Netns.create("nt-ifd");
  wire = await Netns.create("nt-wired");
  await guest.veth("ens3", "w0", { mac: MAC, peerNs: wire });
  await guest.veth("ens4", "w1", { mac: HOLDER_MAC, peerNs: wire });
  await guest.ip("addr", "add", "10.0.3.3/24", "dev", "ens3");
  await guest.ip("addr", "add", "fd00:3::3/64", "dev", "ens3", "nodad");
  await guest.ip("addr", "add", "fd00:4::4/64", "dev", "ens4", "nodad");
  agent = await guest.startAgent();
  client = await AgentClient.connect(`unix://${agent.socket}`);
});

afterEach(async () => {
  client?.close();
  await agent?.stop();
  await guest?.remove();
  await wire?.remove();
});

const v4 = (address: string, mask: string) => ({ address, mask });
const v6 = (address: string, mask: string) => ({ family: IPFamily.v6, address, mask });

function update(iface: {
  name?: string;
  hwAddr: string;
  mtu?: bigint;
  IPAddresses: { family?: IPFamily; address: string; mask: string }[];
}) {
  return client.unary(
    AgentService.method.updateInterface,
    { interface: iface },
    { timeoutMs: 10_000 },
  );
}

/** Per link, by MAC: name, MTU, UP, and the addresses a request manages (link-local aside). */
async function linkState(): Promise<Map<string, object>> {
  const links = await guest.json<IpLink[]>("addr", "show");
  return new Map(
    links.map((l) => [
      l.address,
      {
        name: l.ifname,
        mtu: l.mtu,
        up: l.flags.includes("UP"),
        addrs: l.addr_info
          .filter((a) => a.scope !== "link")
          .map((a) => `${a.local}/${a.prefixlen}${a.tentative ? " tentative" : ""}`)
          .sort(),
      },
    ]),
  );
}

async function sysctl(key: string): Promise<void> {
  const r = await run("ip", ["netns", "exec", guest.name, "sysctl", "-qw", key]);
  if (r.code !== 0) throw new Error(`sysctl ${key}: ${r.stderr}`);
}

describe("UpdateInterface: what taking a link down costs", () => {
  it("a rename keeps the IPv6 address asked for, not tentative", async () => {
    await update({
      name: "eth0",
      hwAddr: MAC,
      IPAddresses: [v4("10.0.3.3", "24"), v6("fd00:3::3", "64")],
    });
    expect((await linkState()).get(MAC)).toEqual({
      name: "eth0",
      mtu: 1500,
      up: true,
      addrs: ["10.0.3.3/24", "fd00:3::3/64"],
    });
  });

  it("a rename that also renumbers removes the old IPv6 address and adds the new one", async () => {
    await update({ name: "eth0", hwAddr: MAC, IPAddresses: [v6("fd00:3::5", "64")] });
    expect((await linkState()).get(MAC)).toMatchObject({
      name: "eth0",
      addrs: ["fd00:3::5/64"],
    });
  });

  it("a name swap leaves the holder with its IPv6 address, name and up state", async () => {
    await update({
      name: "ens4",
      hwAddr: MAC,
      IPAddresses: [v4("10.0.3.3", "24"), v6("fd00:3::3", "64")],
    });
    const state = await linkState();
    expect(state.get(MAC)).toMatchObject({ name: "ens4", addrs: ["10.0.3.3/24", "fd00:3::3/64"] });
    expect(state.get(HOLDER_MAC)).toEqual({
      name: "ens3",
      mtu: 1500,
      up: true,
      addrs: ["fd00:4::4/64"],
    });
  });

  it("with keep_addr_on_down=1 (the kernel keeps the addresses) a swap still succeeds and keeps them", async () => {
    await sysctl("net.ipv6.conf.ens3.keep_addr_on_down=1");
    await sysctl("net.ipv6.conf.ens4.keep_addr_on_down=1");
    await update({
      name: "ens4",
      hwAddr: MAC,
      IPAddresses: [v4("10.0.3.3", "24"), v6("fd00:3::3", "64")],
    });
    const state = await linkState();
    expect(state.get(MAC)).toMatchObject({ name: "ens4", addrs: ["10.0.3.3/24", "fd00:3::3/64"] });
    expect(state.get(HOLDER_MAC)).toMatchObject({ name: "ens3", addrs: ["fd00:4::4/64"] });
  });

  it("a swap that fails once the holder is down (its temporary name taken) gives the holder its IPv6 address back", async () => {
    const holder = (await guest.json<IpLink[]>("link", "show", "ens4"))[0] as IpLink;
    await guest.veth(swapName(holder.ifindex), "w9", { peerNs: wire, up: false });
    const before = await linkState();
    const err = await update({
      name: "ens4",
      hwAddr: MAC,
      IPAddresses: [v6("fd00:3::3", "64")],
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TtrpcError);
    expect((err as Error).message).toContain(swapName(holder.ifindex));
    expect(await linkState()).toEqual(before);
    // The restore batch runs with -force: a line it got wrong shows only in the log.
    expect(agent.child.stderr).not.toContain("restore incomplete");
  });

  it("an MTU below 1280 cannot keep an IPv6 address: refused before the swap, both links as they were", async () => {
    const before = await linkState();
    const err = await update({
      name: "ens4",
      hwAddr: MAC,
      mtu: 1000n,
      IPAddresses: [v4("10.0.3.3", "24"), v6("fd00:3::3", "64")],
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TtrpcError);
    expect((err as TtrpcError).code).toBe(Code.INVALID_ARGUMENT);
    expect((err as Error).message).toMatch(/^interface\.mtu: 1000 is below 1280, .*\(fd00:3::3\)/);
    expect(await linkState()).toEqual(before);
    // The restore batch runs with -force: a line it got wrong shows only in the log.
    expect(agent.child.stderr).not.toContain("restore incomplete");
  });
});

describe("Apply: the restore after a failure part-way", () => {
  it.each([0, 1])(
    "a rename undone (the link taken down again) gives the link its IPv6 address back (keep_addr_on_down=%i)",
    async (keep) => {
      await sysctl(`net.ipv6.conf.ens3.keep_addr_on_down=${keep}`);
      const before = await linkState();
      const desired = {
        interfaces: [
          {
            mac: MAC,
            name: "eth0",
            up: true,
            addresses: [
              { address: "10.0.3.3", prefix: 24 },
              { address: "fd00:3::3", prefix: 64 },
            ],
          },
        ],
        // Valid, refused by the kernel after the link lines: no route to the gateway.
        routes: [{ dest: "198.51.100.0/24", gateway: "203.0.113.1", device: "eth0" }],
      };
      const err = await client.unary(Network.method.apply, { desired }, { timeoutMs: 10_000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TtrpcError);
      expect((err as Error).message).toMatch(/198\.51\.100\.0\/24/);
      expect(await linkState()).toEqual(before);
      // The restore batch runs with -force: a line it got wrong shows only in the log.
      expect(agent.child.stderr).not.toContain("restore incomplete");
    },
  );
});
