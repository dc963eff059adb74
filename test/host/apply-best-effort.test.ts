/**
 * Apply's best_effort: what the guest's kernel refuses
 * (a route whose gateway it cannot reach, an IPv6 address on a link with
 * IPv6 disabled, a sysctl value it refuses, a sysctl key it does not have)
 * is left out and listed by field, and everything else goes in; without
 * best_effort the same request fails and changes nothing. At most
 * APPLY_MAX_REFUSED elements are left out by attempts: one more refusal
 * fails the call, the guest as before. Checked by independent reads of
 * the guest netns (ip -j, sysctl files read by cat inside it).
 */
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { APPLY_MAX_REFUSED } from "../../src/common/limits";
import {
  InterfaceSchema,
  Network,
  RouteSchema,
  type State,
  StateSchema,
  SysctlSchema,
} from "../../src/gen/network_pb";
import { Code, type TtrpcError } from "../../src/ttrpc/codes";
import { run } from "../helpers/process";
import { Guest, randomMac, snapshot, waitFor } from "./helpers";
import { allRoutes, sysctl } from "./state-helpers";

const MAC = randomMac();

let guest: Guest;
let client: AgentClient;

beforeAll(async () => {
  guest = await Guest.create(MAC);
  // A guest whose NIC has IPv6 off: an IPv6 address there is refused (EACCES).
  const off = await run("ip", [
    "netns",
    "exec",
    guest.ns.name,
    "sysctl",
    "-qw",
    "net.ipv6.conf.gst0.disable_ipv6=1",
  ]);
  expect(off.code, off.stderr).toBe(0);
  client = await AgentClient.connect(guest.addr);
});
afterAll(async () => {
  client?.close();
  await guest?.remove();
});

const unreachable = (n: number) =>
  create(RouteSchema, { dest: `198.51.${n}.0/24`, gateway: "203.0.113.1", device: "eth0" });

function desired(extraRoutes: number): State {
  return create(StateSchema, {
    interfaces: [
      create(InterfaceSchema, {
        mac: MAC,
        name: "eth0",
        up: true,
        addresses: [
          { address: "10.1.0.2", prefix: 24 },
          { address: "fd00::2", prefix: 64 },
        ],
      }),
    ],
    routes: [
      unreachable(0),
      create(RouteSchema, { dest: "10.2.0.0/16", gateway: "10.1.0.1", device: "eth0" }),
      ...Array.from({ length: extraRoutes }, (_, i) => unreachable(i + 1)),
    ],
    sysctls: [
      create(SysctlSchema, { key: "net.ipv4.conf.eth0.no_such_key_here", value: "1" }),
      create(SysctlSchema, { key: "net.ipv4.ip_local_port_range", value: "50000 1000" }),
      create(SysctlSchema, { key: "net.ipv4.conf.eth0.rp_filter", value: "2" }),
    ],
  });
}

async function fails(state: State, bestEffort: boolean): Promise<TtrpcError> {
  try {
    await client.unary(Network.method.apply, { desired: state, exact: true, bestEffort });
  } catch (err) {
    return err as TtrpcError;
  }
  throw new Error("Apply succeeded");
}

// The restore renames the NIC back (down and up): its carrier comes back by itself, a moment later.
const carrierBack = () =>
  waitFor(
    async () =>
      (await guest.ns.json<{ operstate: string }[]>("link", "show", "gst0"))[0]?.operstate === "UP",
    { what: "gst0's carrier back after the restore" },
  );

const everything = async () => ({
  links: await snapshot(guest.ns),
  routes: await allRoutes(guest.ns),
  ports: await sysctl(guest.ns, "net.ipv4.ip_local_port_range"),
});

describe("Apply with best_effort", { timeout: 180_000 }, () => {
  it("without it, the first refusal fails the call and nothing changes", async () => {
    const before = await everything();
    const err = await fails(desired(0), false);
    expect(err.code).toBe(Code.PERMISSION_DENIED);
    expect(err.message).toBe(
      "Apply: ip addr add fd00::2/64 dev eth0 nodad: ipv6: IPv6 is disabled on this device",
    );
    await carrierBack();
    expect(await everything()).toEqual(before);
  });

  it("one more refusal than the bound fails the call, restored", async () => {
    const before = await everything();
    // Routes 0 and 2.., the address and the port range: one refusal more than the bound
    // (the absent key is left out before any attempt, and counts for nothing).
    const err = await fails(desired(APPLY_MAX_REFUSED - 2), true);
    expect(err.message).toMatch(/198\.51\.\d+\.0\/24|ip_local_port_range|fd00::2/);
    await carrierBack();
    expect(await everything()).toEqual(before);
  });

  it("leaves out each refused element, by field, and applies the rest", async () => {
    // The address and the port range are two refusals; APPLY_MAX_REFUSED - 3 routes more reach the bound.
    const answer = await client.unary(Network.method.apply, {
      desired: desired(APPLY_MAX_REFUSED - 3),
      exact: true,
      bestEffort: true,
    });
    const fields = answer.leftOut.map((l) => l.field);
    expect(fields[0]).toBe("desired.sysctls[0]");
    expect(answer.leftOut[0]?.reason).toContain("no such key");
    expect(new Set(fields)).toEqual(
      new Set([
        "desired.sysctls[0]",
        "desired.sysctls[1]",
        "desired.interfaces[0].addresses[1]",
        "desired.routes[0]",
        ...Array.from({ length: APPLY_MAX_REFUSED - 3 }, (_, i) => `desired.routes[${i + 2}]`),
      ]),
    );
    expect(fields).toHaveLength(APPLY_MAX_REFUSED + 1);
    const reasons = Object.fromEntries(answer.leftOut.map((l) => [l.field, l.reason]));
    expect(reasons["desired.routes[0]"]).toMatch(
      /^ip route replace 198\.51\.0\.0\/24 via 203\.0\.113\.1 dev eth0 .*: /,
    );
    expect(reasons["desired.interfaces[0].addresses[1]"]).toMatch(
      /^ip addr add fd00::2\/64 dev eth0 .*: IPv6 is disabled on this device$/,
    );
    expect(reasons["desired.sysctls[1]"]).toContain("net.ipv4.ip_local_port_range=50000 1000");

    // Independent reads: the rest is in.
    const [l] = await guest.ns.json<{ ifname: string; addr_info: { local: string }[] }[]>(
      "addr",
      "show",
      "dev",
      "eth0",
    );
    expect(l?.addr_info.map((a) => a.local)).toEqual(["10.1.0.2"]);
    const main = await guest.ns.json<{ dst: string; gateway?: string }[]>(
      "route",
      "show",
      "table",
      "main",
    );
    expect(main.map((r) => r.dst)).toContain("10.2.0.0/16");
    expect(main.some((r) => r.dst.startsWith("198.51."))).toBe(false);
    expect(await sysctl(guest.ns, "net.ipv4.conf.eth0.rp_filter")).toBe("2");
    expect(await sysctl(guest.ns, "net.ipv4.ip_local_port_range")).not.toBe("50000\t1000");
  });
});
