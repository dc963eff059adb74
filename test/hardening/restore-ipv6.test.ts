/**
 * A restore is complete only when the link's IPv6 state reads as before.
 * UpdateInterface lowers eth0's MTU to 1000 with IPv4 addresses alone (so
 * the kernel dropping the link's IPv6 state is what was asked for), and ip
 * dies on the line after the MTU: the restore puts the MTU back, and the
 * kernel makes the link's link-local again, in duplicate address
 * detection. Right after the refusal an independent `ip` must read the
 * link-local there and usable (not tentative), with its local route and
 * the fe80::/64 route, as before the call.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { TtrpcError } from "../../src/ttrpc/codes";
import { Netns } from "../helpers/netns";
import { tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { faultyIp } from "./faulty-ip";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

interface AddrLink {
  mtu: number;
  addr_info?: { local: string; prefixlen: number; tentative?: boolean }[];
}

/** eth0's IPv6 addresses with their flags, and its IPv6 routes of every table. */
async function ipv6State(ns: Netns): Promise<string> {
  const [link] = await ns.json<AddrLink[]>("-6", "addr", "show", "dev", "eth0");
  const routes = await ns.ip("-json", "-6", "route", "show", "table", "all", "dev", "eth0");
  const addrs = (link?.addr_info ?? []).map(
    (a) => `${a.local}/${a.prefixlen}${a.tentative ? " tentative" : ""}`,
  );
  return `mtu ${link?.mtu}\n${addrs.join("\n")}\n${routes}`;
}

describe("a restore after a failure part-way", () => {
  it("reads as before, IPv6 included, at once: the link-local back and usable, its routes there", async () => {
    const dir = tempDir("netagent-restore6-");
    cleanup.push(() => dir.remove());
    const ip = faultyIp(dir);
    const ns = await Netns.create("nt-rs6");
    cleanup.push(() => ns.remove());
    await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0e:11" });
    await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
    await waitFor(
      async () => {
        const s = await ipv6State(ns);
        return s.includes("fe80:") && !s.includes("tentative") && s.includes('"type":"local"');
      },
      { what: "eth0's link-local usable, with its local route" },
    );
    const agent = await startHardenedAgent({
      netns: ns,
      args: ["--log-level", "info", "--ip-session", "off"],
      ipBin: ip.bin,
    });
    cleanup.push(() => agent.stop());
    const client = await AgentClient.connect(`unix://${agent.socket}`);
    cleanup.push(() => client.close());
    const before = await ipv6State(ns);
    // The MTU line runs, the address after it does not: ip dies on line 2.
    ip.dieOnLine(2);
    const err = await client
      .unary(AgentService.method.updateInterface, {
        interface: {
          hwAddr: "02:00:00:00:0e:11",
          name: "eth0",
          mtu: 1000n,
          IPAddresses: [
            { address: "10.1.1.2", mask: "24" },
            { address: "10.1.1.3", mask: "24" },
          ],
        },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const after = await ipv6State(ns);
    expect(err).toBeInstanceOf(TtrpcError);
    expect(after, `${(err as Error).message}\n${agent.child.stderr}`).toBe(before);
    expect(agent.child.stderr).toMatch(/restored state after a failed change/);
  }, 60_000);
});
