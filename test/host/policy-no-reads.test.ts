/**
 * A policy that refuses reads (`reads: false`): the changing calls must not
 * answer with what they read of the guest, or a host learns by a change
 * what it may not read. A guest netns holds what no request names (the
 * NIC's kernel-made IPv6 link-local address, its name and MTU, a second
 * link `hid0` with 192.0.2.77/24 and the kernel's prefix routes); through
 * containerd's Go ttrpc client UpdateInterface, UpdateRoutes and Apply
 * each change the guest (seen by an independent `ip -n NS -json` read),
 * and each answer holds nothing but values of its own request. An Apply
 * dry run (which changes nothing and answers only what it read) is refused
 * as a read. Last, the same calls under `reads: true` still answer the
 * state read back.
 */

import { writeFileSync } from "node:fs";
import {
  create,
  type DescMessage,
  fromBinary,
  type JsonValue,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  RoutesSchema,
  UpdateInterfaceRequestSchema,
  UpdateRoutesRequestSchema,
} from "../../src/gen/agent_pb";
import { ApplyRequestSchema, ApplyResponseSchema } from "../../src/gen/network_pb";
import { InterfaceSchema, IPFamily } from "../../src/gen/types_pb";
import { Code } from "../../src/ttrpc/codes";
import { goClient, goPrograms } from "../helpers/go";
import { randomMac } from "../helpers/netns";
import { Guest, tempDir } from "./helpers";

const MAC = randomMac();
const GW = "10.248.246.145";
/** In the guest, named by no request: none may come back in an answer. */
const HIDDEN = ["192.0.2.77", "192.0.2.0/24", "hid0", "fe80:", "10.248.246.144/28", "veth"];

const policyOf = (reads: boolean) => ({
  netagentPolicy: 1,
  interfaces: { macs: [MAC], names: "any", max: 2, mtu: { min: 1280, max: 1500 } },
  addresses: { ipv4: { within: ["10.248.246.144/28"] }, perInterface: 2 },
  routes: {
    destinations: { exact: ["0.0.0.0/0"], within: ["203.0.113.0/24", "198.51.100.0/24"] },
    gateways: [`${GW}/32`],
  },
  reads,
});

const dir = tempDir("netagent-policy-no-reads-");
let guest: Guest;

/** Every string and number in a message's JSON form (its values, not its field names). */
function leaves(v: JsonValue, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) leaves(x, out);
  else if (v !== null && typeof v === "object") for (const x of Object.values(v)) leaves(x, out);
  else if (typeof v === "string" || typeof v === "number") out.add(String(v));
  return out;
}

/** Calls `method` with `request`; answers the status, the decoded reply and its bytes as text. */
async function call<Req extends DescMessage, Res extends DescMessage>(
  service: string,
  method: string,
  schemas: [Req, Res],
  request: Parameters<typeof toBinary<Req>>[1],
) {
  const [step] = await goClient(guest.agent.socket, [
    {
      service,
      method,
      payload: Buffer.from(toBinary(schemas[0], request)).toString("hex"),
      timeoutMs: 20_000,
    },
  ]);
  const r = step?.results?.[0];
  const bytes = Buffer.from(r?.payload ?? "", "hex");
  const reply = r?.code === Code.OK ? fromBinary(schemas[1], bytes) : undefined;
  return { code: r?.code, message: r?.message, reply, text: bytes.toString("latin1") };
}

/** What of `reply` is not in `request`, and which of the guest's hidden values its bytes carry. */
function beyond<Req extends DescMessage, Res extends DescMessage>(
  schemas: [Req, Res],
  request: Parameters<typeof toJson<Req>>[1],
  reply: Parameters<typeof toJson<Res>>[1],
  text: string,
) {
  const asked = leaves(toJson(schemas[0], request));
  return {
    values: [...leaves(toJson(schemas[1], reply))].filter((x) => !asked.has(x)),
    hidden: HIDDEN.filter((h) => text.includes(h)),
  };
}

const ifaceRequest = () =>
  create(UpdateInterfaceRequestSchema, {
    // No name, no MTU: the guest's own ("gst0", 1500) are not the host's to learn.
    interface: {
      hwAddr: MAC,
      IPAddresses: [{ family: IPFamily.v4, address: "10.248.246.146", mask: "28" }],
    },
  });
const route = (dest: string) => ({ dest, gateway: GW, device: "gst0", family: IPFamily.v4 });
const routesRequest = () =>
  create(UpdateRoutesRequestSchema, {
    routes: { Routes: [route("0.0.0.0/0"), route("203.0.113.0/24")] },
  });
const applyRequest = (dryRun = false) =>
  create(ApplyRequestSchema, {
    dryRun,
    desired: {
      interfaces: [
        {
          mac: MAC,
          up: true,
          addresses: [
            { address: "10.248.246.146", prefix: 28 },
            { address: "10.248.246.147", prefix: 28 },
          ],
        },
      ],
      routes: [
        { dest: "0.0.0.0/0", gateway: GW, device: "gst0" },
        { dest: "203.0.113.0/24", gateway: GW, device: "gst0" },
        { dest: "198.51.100.0/24", gateway: GW, device: "gst0" },
      ],
    },
  });

const IFACE = [UpdateInterfaceRequestSchema, InterfaceSchema] as [
  typeof UpdateInterfaceRequestSchema,
  typeof InterfaceSchema,
];
const ROUTES = [UpdateRoutesRequestSchema, RoutesSchema] as [
  typeof UpdateRoutesRequestSchema,
  typeof RoutesSchema,
];
const APPLY = [ApplyRequestSchema, ApplyResponseSchema] as [
  typeof ApplyRequestSchema,
  typeof ApplyResponseSchema,
];

/** The guest's addresses and main-table routes as `ip -json` prints them. */
async function guestText(): Promise<string> {
  return (
    (await guest.ns.ip("-json", "addr", "show")) + (await guest.ns.ip("-json", "route", "show"))
  );
}

beforeAll(async () => {
  goPrograms();
  const file = dir.join("no-reads.json");
  writeFileSync(file, JSON.stringify(policyOf(false)));
  guest = await Guest.create(MAC, "gst0", ["--policy", file]);
  await guest.addNic("hid0", randomMac());
  await guest.ns.ip("addr", "add", "192.0.2.77/24", "dev", "hid0");
});
afterAll(async () => {
  await guest?.remove();
  dir.remove();
});

describe("a policy refusing reads: the changing calls answer nothing of the guest", () => {
  it("UpdateInterface answers the interface as asked, not as read; the address is set", async () => {
    const request = ifaceRequest();
    const r = await call("grpc.AgentService", "UpdateInterface", IFACE, request);
    expect(r.code, r.message).toBe(Code.OK);
    const addrs = await guest.ns.json<{ addr_info: { local: string }[] }[]>("addr", "show", "gst0");
    const locals = addrs[0]?.addr_info.map((a) => a.local) ?? [];
    expect(locals).toContain("10.248.246.146");
    expect(locals.some((a) => a.startsWith("fe80:"))).toBe(true);
    expect(beyond(IFACE, request, r.reply as never, r.text)).toEqual({ values: [], hidden: [] });
    expect(r.reply?.IPAddresses.map((a) => `${a.address}/${a.mask}`)).toEqual([
      "10.248.246.146/28",
    ]);
  });

  it("UpdateRoutes answers the routes as asked; the routes are set, the kernel's kept", async () => {
    const request = routesRequest();
    const r = await call("grpc.AgentService", "UpdateRoutes", ROUTES, request);
    expect(r.code, r.message).toBe(Code.OK);
    const routes = await guest.ns.json<{ dst: string; gateway?: string }[]>("route", "show");
    const dsts = routes.map((x) => `${x.dst} ${x.gateway ?? ""}`);
    for (const d of [
      `default ${GW}`,
      `203.0.113.0/24 ${GW}`,
      "10.248.246.144/28 ",
      "192.0.2.0/24 ",
    ])
      expect(dsts).toContain(d);
    expect(beyond(ROUTES, request, r.reply as never, r.text)).toEqual({ values: [], hidden: [] });
    expect(r.reply?.Routes.map((x) => x.dest)).toEqual(["0.0.0.0/0", "203.0.113.0/24"]);
  });

  it("Apply answers no state and no plan; the state is applied", async () => {
    const request = applyRequest();
    const r = await call("netagent.v1.Network", "Apply", APPLY, request);
    expect(r.code, r.message).toBe(Code.OK);
    const now = await guestText();
    expect(now).toContain('"10.248.246.147"');
    expect(now).toContain('"198.51.100.0/24"');
    expect(now).toContain('"192.0.2.77"');
    expect(beyond(APPLY, request, r.reply as never, r.text)).toEqual({ values: [], hidden: [] });
    expect(r.reply?.result).toBeUndefined();
    expect(r.reply?.plan).toEqual([]);
  });

  it("an Apply dry run (a read: it changes nothing) is refused by the rule reads", async () => {
    const before = await guestText();
    const r = await call("netagent.v1.Network", "Apply", APPLY, applyRequest(true));
    expect(r.code).toBe(Code.PERMISSION_DENIED);
    expect(r.message).toMatch(/^policy rule reads refuses dry_run "true": /);
    expect(await guestText()).toBe(before);
  });

  it("under reads: true the same calls answer the state read back", async () => {
    const file = dir.join("reads.json");
    writeFileSync(file, JSON.stringify(policyOf(true)));
    await guest.agent.stop();
    (guest as unknown as { agent: Guest["agent"] }).agent = await guest.ns.startAgent([
      "--policy",
      file,
    ]);
    const i = await call("grpc.AgentService", "UpdateInterface", IFACE, ifaceRequest());
    expect(i.code, i.message).toBe(Code.OK);
    expect(i.reply?.name).toBe("gst0");
    expect(i.reply?.IPAddresses.some((a) => a.address.startsWith("fe80:"))).toBe(true);
    const r = await call("grpc.AgentService", "UpdateRoutes", ROUTES, routesRequest());
    expect(r.reply?.Routes.map((x) => x.dest)).toContain("10.248.246.144/28");
    const a = await call("netagent.v1.Network", "Apply", APPLY, applyRequest(true));
    expect(a.reply?.result?.interfaces.map((x) => x.name)).toContain("hid0");
  });
});
