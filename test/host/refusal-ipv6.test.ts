/**
 * A refusal leaves the guest as it was, at once, IPv6 included. A CNI ptp
 * pod synced into a guest; then UpdateInterface (the Kata call) and Apply
 * (netagent.v1) ask for its NIC with an MTU below IPv6's 1280 while
 * listing an IPv6 address (its link-local). The kernel drops a link's
 * IPv6 state below 1280, so such a request cannot be carried out: it is
 * refused INVALID_ARGUMENT naming the MTU before anything changes, and an
 * independent `ip -j addr` and `ip -j route show table all` of the guest
 * right after the answer read exactly as before (no address tentative, no
 * local or prefix route missing).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { AgentService } from "../../src/gen/agent_pb";
import { Network } from "../../src/gen/network_pb";
import { IPFamily } from "../../src/gen/types_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { ctl, Guest, PtpPod } from "./helpers";

let pod: PtpPod;
let guest: Guest;
let client: AgentClient;
let mac: string;

beforeAll(async () => {
  pod = await PtpPod.create();
  mac = await pod.mac();
  guest = await Guest.create(mac, "eth0");
  const s = await ctl(["--addr", guest.addr, "sync", "--netns", pod.pod.name]);
  expect(s.code, s.stdout + s.stderr).toBe(0);
  client = await AgentClient.connect(guest.addr);
}, 120_000);

afterAll(async () => {
  client?.close();
  await guest?.remove();
  await pod?.remove();
});

/** The guest's addresses and every route of both families, as `ip -j` prints them. */
async function guestState(): Promise<string> {
  const ns = guest.ns;
  const parts = await Promise.all([
    ns.ip("-json", "addr", "show"),
    ns.ip("-json", "route", "show", "table", "all"),
    ns.ip("-json", "-6", "route", "show", "table", "all"),
  ]);
  return parts.join("\n");
}

async function refusal(call: Promise<unknown>): Promise<TtrpcError> {
  const err = await call.then(
    () => new Error("accepted"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TtrpcError);
  return err as TtrpcError;
}

describe("an MTU below 1280 for a link whose request lists an IPv6 address", () => {
  it("UpdateInterface: refused naming the MTU, the guest as it was at once", async () => {
    const before = await guestState();
    expect(before).not.toMatch(/tentative/);
    const addrs = await pod.addresses();
    const linkLocal = addrs.find((a) => a.startsWith("fe80:")) as string;
    const v4 = addrs.find((a) => !a.includes(":")) as string;
    const err = await refusal(
      client.unary(
        AgentService.method.updateInterface,
        {
          interface: {
            hwAddr: mac,
            name: "eth0",
            mtu: 68n,
            IPAddresses: [v4, linkLocal].map((a) => {
              const [address = "", mask = ""] = a.split("/");
              return { family: a.includes(":") ? IPFamily.v6 : IPFamily.v4, address, mask };
            }),
          },
        },
        { timeoutMs: 30_000 },
      ),
    );
    const after = await guestState();
    expect(after, err.message).toBe(before);
    expect(err.code, err.message).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toMatch(/^interface\.mtu: 68 /);
    expect(err.message).toContain("1280");
  });

  it("Apply: refused naming the interface's MTU, the guest as it was at once", async () => {
    const before = await guestState();
    const state = await client.unary(Network.method.get, {}, { timeoutMs: 30_000 });
    const i = state.interfaces.findIndex((x) => x.mac === mac);
    expect(i).toBeGreaterThanOrEqual(0);
    const nic = state.interfaces[i];
    if (!nic) throw new Error("no NIC in Get");
    nic.mtu = 1279;
    nic.addresses = nic.addresses.filter((a) => a.address.includes(":"));
    expect(nic.addresses.length).toBeGreaterThan(0);
    const err = await refusal(
      client.unary(Network.method.apply, { desired: state }, { timeoutMs: 30_000 }),
    );
    const after = await guestState();
    expect(after, err.message).toBe(before);
    expect(err.code, err.message).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toMatch(new RegExp(`^desired\\.interfaces\\[${i}\\]\\.mtu: 1279 `));
  });

  it("below 68 is refused whatever the addresses", async () => {
    const before = await guestState();
    const err = await refusal(
      client.unary(
        AgentService.method.updateInterface,
        { interface: { hwAddr: mac, name: "eth0", mtu: 67n } },
        { timeoutMs: 30_000 },
      ),
    );
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toMatch(/^interface\.mtu: 67 /);
    expect(await guestState()).toBe(before);
  });
});
