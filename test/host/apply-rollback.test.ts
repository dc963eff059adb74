/**
 * Apply is all or nothing. A guest mirrored from a real ptp + tuning + sbr
 * pod gets Apply requests that change rules, tables, links and sysctls and
 * then fail part-way: a sysctl the kernel refuses after everything else is
 * done, a route the kernel refuses after the links changed. Afterwards the
 * guest is exactly as before, by independent reads (ip -json link/addr,
 * every table, both rule lists, sysctl files read by cat in the netns).
 * Also: a dry run and a bad request change nothing.
 */
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import {
  AddressSchema,
  Network,
  NexthopSchema,
  RouteSchema,
  type RouteType,
  type State,
  StateSchema,
  SysctlSchema,
} from "../../src/gen/network_pb";
import { Code, type TtrpcError } from "../../src/ttrpc/codes";
import { ctl, Guest, snapshot } from "./helpers";
import { allRoutes, ChainPod, ptpTuningSbr, rules, sysctl } from "./state-helpers";

const KEYS = [
  "net.ipv4.conf.eth0.rp_filter",
  "net.ipv4.conf.eth0.arp_ignore",
  "net.ipv4.ip_local_port_range",
  "net.ipv4.conf.all.forwarding",
];

const sysctlOf = (key: string, value: string) => create(SysctlSchema, { key, value });

let pod: ChainPod;
let guest: Guest;
let client: AgentClient;
let synced: State;

beforeAll(async () => {
  pod = await ChainPod.create();
  await pod.attach(ptpTuningSbr());
  guest = await Guest.create();
  await guest.addNic("gst0", await pod.mac());
  const s = await ctl(["--addr", guest.addr, "sync", "--netns", pod.pod.name]);
  expect(s.code, s.stderr).toBe(0);
  client = await AgentClient.connect(guest.addr);
  synced = await client.unary(Network.method.get, {});
});
afterAll(async () => {
  client?.close();
  await guest?.remove();
  await pod?.remove();
});

async function everything(): Promise<Record<string, unknown>> {
  const values: Record<string, string> = {};
  for (const k of KEYS) values[k] = await sysctl(guest.ns, k);
  return {
    links: await snapshot(guest.ns),
    routes: await allRoutes(guest.ns),
    rules: await rules(guest.ns),
    sysctls: values,
    nexthops: await guest.ns.json("nexthop", "show"),
  };
}

/** The synced state with rules, tables, the link and sysctls changed. */
function changed(extra: (s: State) => void): State {
  const s = create(StateSchema, structuredClone(synced));
  for (const r of s.routes) if (r.table === 100) r.table = 200;
  for (const r of s.rules)
    if (r.table === 100) {
      r.table = 200;
      r.priority = 32000;
    }
  const eth0 = s.interfaces.find((i) => i.name === "eth0");
  if (eth0) {
    eth0.mtu = 1300;
    eth0.addresses.push(create(AddressSchema, { address: "192.0.2.77", prefix: 24 }));
  }
  s.sysctls = [
    sysctlOf("net.ipv4.conf.eth0.rp_filter", "1"),
    sysctlOf("net.ipv4.conf.all.forwarding", "1"),
    sysctlOf("net.ipv4.conf.eth0.arp_ignore", "2"),
  ];
  extra(s);
  return s;
}

async function applyFails(desired: State): Promise<TtrpcError> {
  try {
    await client.unary(Network.method.apply, { desired, exact: true });
  } catch (err) {
    return err as TtrpcError;
  }
  throw new Error("Apply succeeded");
}

describe("Apply: all or nothing", () => {
  it("a sysctl the kernel refuses, written last: links, tables, rules and the sysctls written before are restored", async () => {
    const before = await everything();
    // min above max: valid text, refused by the kernel (EINVAL) after the batch and two writes.
    const err = await applyFails(
      changed((s) => s.sysctls.push(sysctlOf("net.ipv4.ip_local_port_range", "50000 1000"))),
    );
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toContain("net.ipv4.ip_local_port_range");
    expect(await everything()).toEqual(before);
    expect(await sysctl(guest.ns, "net.ipv4.conf.eth0.rp_filter")).toBe("2");
  });

  it("a route the kernel refuses, after the link lines: everything restored", async () => {
    const before = await everything();
    const err = await applyFails(
      changed((s) =>
        s.routes.push(
          create(RouteSchema, {
            table: 200,
            dest: "198.51.100.0/24",
            gateway: "203.0.113.1",
            device: "eth0",
          }),
        ),
      ),
    );
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.message).toMatch(
      /198\.51\.100\.0\/24 via 203\.0\.113\.1.*: Nexthop has invalid gateway/,
    );
    expect(await everything()).toEqual(before);
  });

  it("nexthop objects and a multipath route changed, then a sysctl the kernel refuses: objects and routes restored", async () => {
    const gw = "10.248.246.145";
    const withObjects = create(StateSchema, structuredClone(synced));
    withObjects.nexthops = [
      { id: 5, family: 4, gateway: gw, device: "eth0", onlink: true },
      { id: 6, family: 4, gateway: "10.248.246.150", device: "eth0", onlink: true },
      { id: 7, group: [{ id: 5, weight: 2 }, { id: 6 }] },
    ].map((n) => create(NexthopSchema, n));
    withObjects.routes.push(
      create(RouteSchema, { table: 100, family: 4, dest: "10.11.0.0/16", nhid: 7 }),
      create(RouteSchema, {
        table: 100,
        family: 4,
        dest: "10.12.0.0/16",
        hops: [
          { gateway: gw, device: "eth0", weight: 1, onlink: true },
          { gateway: "10.248.246.150", device: "eth0", weight: 3, onlink: true },
        ],
      }),
    );
    await client.unary(Network.method.apply, { desired: withObjects, exact: true });
    const before = await everything();
    expect((before.nexthops as unknown[]).length).toBe(3);
    const next = create(StateSchema, structuredClone(withObjects));
    // 5 changes in place, 6 goes (out of the group), 8 comes, and a route by it.
    next.nexthops = [
      { id: 5, family: 4, gateway: "10.248.246.151", device: "eth0", onlink: true },
      { id: 7, group: [{ id: 5 }] },
      { id: 8, family: 4, blackhole: true },
    ].map((n) => create(NexthopSchema, n));
    next.routes = next.routes.filter((r) => r.dest !== "10.12.0.0/16");
    next.routes.push(create(RouteSchema, { table: 100, family: 4, dest: "10.13.0.0/16", nhid: 8 }));
    next.sysctls = [sysctlOf("net.ipv4.ip_local_port_range", "50000 1000")];
    const err = await applyFails(next);
    expect(err.message).toContain("net.ipv4.ip_local_port_range");
    expect(await everything()).toEqual(before);
    // Back to the state the other tests start from.
    await client.unary(Network.method.apply, { desired: synced, exact: true });
    expect(await guest.ns.json("nexthop", "show")).toEqual([]);
  });
});

describe("Apply: all or nothing: dry_run, bad input", () => {
  it("dry_run answers the plan, in order, and changes nothing", async () => {
    const before = await everything();
    const answer = await client.unary(Network.method.apply, {
      desired: changed(() => {}),
      exact: true,
      dryRun: true,
    });
    const plan = answer.plan;
    expect(plan).toContain("link set dev eth0 mtu 1300");
    expect(
      plan.some((l) =>
        /^route replace 0\.0\.0\.0\/0 via 10\.248\.246\.145 dev eth0 .*table 200$/.test(l),
      ),
    ).toBe(true);
    expect(
      plan.some((l) => /^rule add priority 32000 from 10\.248\.246\.146\/32 lookup 200$/.test(l)),
    ).toBe(true);
    // all.forwarding first: it sets every link's forwarding (a link's own goes after it).
    expect(plan.slice(-3)).toEqual([
      "sysctl net.ipv4.conf.all.forwarding=1",
      "sysctl net.ipv4.conf.eth0.rp_filter=1",
      "sysctl net.ipv4.conf.eth0.arp_ignore=2",
    ]);
    // Additions before deletions: the new rule comes before the old one goes.
    const add = plan.findIndex((l) => l.startsWith("rule add priority 32000"));
    const del = plan.findIndex((l) => l.startsWith("rule del priority 32765"));
    expect(add).toBeGreaterThanOrEqual(0);
    expect(del).toBeGreaterThan(add);
    expect(await everything()).toEqual(before);
  });

  it("bad input is INVALID_ARGUMENT naming the field and the value, before anything changes", async () => {
    const before = await everything();
    const cases: [(s: State) => void, RegExp][] = [
      [
        (s) => s.sysctls.push(sysctlOf("net.ipv4.conf.eth0/../../../kernel.hostname", "x")),
        /desired\.sysctls\[3\]\.key: "net\.ipv4\.conf\.eth0\/\.\.\/\.\.\/\.\.\/kernel\.hostname"/,
      ],
      [
        (s) => s.sysctls.push(sysctlOf("kernel.hostname", "x")),
        /desired\.sysctls\[3\]\.key: "kernel\.hostname" is not a network-namespaced sysctl/,
      ],
      [
        (s) => s.sysctls.push(sysctlOf("net.core.somaxconn", "1\nnet.ipv4.ip_forward=1")),
        /desired\.sysctls\[3\]\.value: /,
      ],
      [
        (s) => s.routes.push({ ...(s.routes[0] as State["routes"][number]), dest: "10.0.0.0/33" }),
        /desired\.routes\[\d+\]\.dest: "10\.0\.0\.0\/33"/,
      ],
      [
        (s) => s.rules.push({ ...(s.rules[0] as State["rules"][number]), iif: "eth0\nrule flush" }),
        /desired\.rules\[\d+\]\.iif: "eth0\\nrule flush"/,
      ],
      [
        // 0-9 are route types (5-9: local, broadcast, anycast, multicast, nat).
        (s) =>
          s.routes.push({ ...(s.routes[0] as State["routes"][number]), type: 10 as RouteType }),
        /desired\.routes\[\d+\]\.type: 10/,
      ],
    ];
    // 1,200 routes: a state this large is validated while the agent reads
    // the guest (state-service.ts); its refusal is the same, the read stopped.
    const many = (s: State) => {
      for (let i = 0; i < 1200; i++) {
        s.routes.push(
          create(RouteSchema, {
            family: 4,
            dest: `172.20.${i >> 8}.${i & 255}/32`,
            device: "eth0",
            table: 300,
            scope: 253,
          }),
        );
      }
    };
    cases.push(
      [
        (s) => {
          many(s);
          s.routes.push({ ...(s.routes[0] as State["routes"][number]), dest: "10.0.0.0/33" });
        },
        /desired\.routes\[\d+\]\.dest: "10\.0\.0\.0\/33"/,
      ],
      [
        (s) => {
          many(s);
          s.sysctls.push(sysctlOf("kernel.hostname", "x"));
        },
        /desired\.sysctls\[3\]\.key: "kernel\.hostname" is not a network-namespaced sysctl/,
      ],
    );
    for (const [mutate, message] of cases) {
      const err = await applyFails(changed(mutate));
      expect(err.code, err.message).toBe(Code.INVALID_ARGUMENT);
      expect(err.message).toMatch(message);
    }
    expect(await everything()).toEqual(before);
  });
});

describe("Apply: all or nothing: a large state", () => {
  it("a large state (validated while the guest is read) is applied whole, then the synced one again", async () => {
    const before = await everything();
    const desired = create(StateSchema, structuredClone(synced));
    const dests = Array.from({ length: 1200 }, (_, i) => `172.21.${i >> 8}.${i & 255}`);
    for (const d of dests) {
      desired.routes.push(
        create(RouteSchema, { family: 4, dest: `${d}/32`, device: "eth0", table: 300, scope: 253 }),
      );
    }
    await client.unary(Network.method.apply, { desired, exact: true }, { timeoutMs: 60_000 });
    const t300 = await guest.ns.json<{ dst: string; dev: string }[]>(
      "route",
      "show",
      "table",
      "300",
    );
    expect(t300.map((r) => `${r.dst} ${r.dev}`).sort()).toEqual(
      dests.map((d) => `${d} eth0`).sort(),
    );
    await client.unary(
      Network.method.apply,
      { desired: synced, exact: true },
      { timeoutMs: 60_000 },
    );
    expect(await everything()).toEqual(before);
  });
});
