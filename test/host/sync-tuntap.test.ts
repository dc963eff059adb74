/**
 * Seeds 2 and 8 of test/podgen: a pod's tun devices are carried
 * like any other link. Apply makes them (`ip tuntap add`, found by name),
 * with their mode and flags, and sync mirrors their addresses, routes, MTU,
 * up state and the rules naming them (a pod's tap with a MAC is the VM's
 * NIC instead: sync-endpoints.test.ts); judged by
 * complete independent reads of pod and guest (test/podgen/compare.ts)
 * and by `ip -j tuntap show` and `ip -d -j link` of both. A guest without
 * tun support (no /dev/net/tun: hidden under a tmpfs in the agent's mount
 * namespace, as a kernel without the module has none) gets everything
 * else, the tun listed as left out with the kernel's reason. An Apply that
 * fails after making a tun leaves none behind; bad input changes nothing.
 */

import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import {
  ApplyRequestSchema,
  type Interface,
  InterfaceSchema,
  Network,
  RouteSchema,
  StateSchema,
} from "../../src/gen/network_pb";
import { Code, type TtrpcError } from "../../src/ttrpc/codes";
import { type MirrorPair, pairsPerTest } from "./complete-helpers";
import { type Netns, snapshot, waitFor } from "./helpers";
import { allRoutes, rules } from "./state-helpers";

const { cleanups, pair } = pairsPerTest();

/** The tun devices as `ip -j tuntap show` lists them (numeric user and group), by name. */
async function tuntaps(ns: Netns): Promise<unknown[]> {
  const out = JSON.parse((await ns.ip("-json", "tuntap", "show")) || "[]") as { ifname: string }[];
  return out.sort((a, b) => a.ifname.localeCompare(b.ifname));
}

/** One link's `ip -d -j link` view without what differs between any two namespaces. */
async function linkView(ns: Netns, dev: string): Promise<Record<string, unknown>> {
  const [l] = await ns.json<Record<string, unknown>[]>("link", "show", "dev", dev);
  const { ifindex: _, stats64: __, ...rest } = l ?? {};
  return rest;
}

/**
 * A pod with a tun (flags, owner), with addresses, routes, a rule. (A tap with a MAC is the
 * VM's NIC, found by MAC: sync-endpoints.test.ts.)
 */
async function tunPod(p: MirrorPair): Promise<void> {
  const { pod } = p;
  await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
  await pod.ip(
    "tuntap",
    ...["add", "dev", "tun0", "mode", "tun", "multi_queue", "vnet_hdr", "pi"],
    ...["user", "0", "group", "100"],
  );
  await pod.ip("link", "set", "tun0", "mtu", "1400");
  await pod.ip("addr", "add", "10.9.0.1/24", "dev", "tun0");
  await pod.ip("link", "set", "tun0", "up");
  await pod.ip("route", "add", "10.99.0.0/16", "dev", "tun0");
  await pod.ip("route", "add", "10.97.0.0/16", "dev", "tun0", "table", "100");
  await pod.ip("rule", "add", "priority", "100", "iif", "tun0", "lookup", "100");
}

describe("sync: tun devices are carried", () => {
  it("a tun with addresses, routes, MTU, up and a rule: mirrored exactly, exit 0", async () => {
    const p = await pair();
    await tunPod(p);
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(s.stdout).not.toMatch(/not mirrored/);
    expect(s.stdout).toMatch(/^ {2}interface tun0 \(tun\) mtu 1400: 10\.9\.0\.1\/24$/m);
    expect(await tuntaps(p.guest.ns)).toEqual(await tuntaps(p.pod));
    expect(await linkView(p.guest.ns, "tun0")).toEqual(await linkView(p.pod, "tun0"));
    expect(await allRoutes(p.guest.ns)).toEqual(await allRoutes(p.pod));
    expect(await rules(p.guest.ns)).toEqual(await rules(p.pod));
    expect(await p.judge()).toEqual([]);
    // Found by name the second time: nothing to do.
    const again = await p.ctl("plan", "--raw", "--netns", p.pod.name);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).not.toMatch(/tuntap/);
  });

  it("a guest without tun support gets everything else; the tun is listed with the kernel's reason; exit 4", async () => {
    // The agent (and every ip it runs) sees no /dev/net/tun.
    const p = await pair({
      launcher: [
        ...["unshare", "-m", "--propagation", "private", "--", "sh", "-c"],
        'mount -t tmpfs none /dev/net && exec "$0" "$@"',
      ],
    });
    const { pod } = p;
    const guestNs = p.guest.ns;
    await pod.ip("addr", "add", "10.1.0.2/24", "dev", "eth0");
    await pod.ip("tuntap", "add", "dev", "tun0", "mode", "tun");
    await pod.ip("addr", "add", "10.9.0.1/24", "dev", "tun0");
    await pod.ip("link", "set", "tun0", "up");
    await pod.ip("route", "add", "10.99.0.0/16", "dev", "tun0");
    await pod.ip("route", "add", "10.98.0.0/16", "via", "10.1.0.1", "dev", "eth0");
    const s = await p.sync();
    expect(s.code, s.stdout + s.stderr).toBe(4);
    expect(s.stdout).toMatch(/^ {2}not mirrored:$/m);
    expect(s.stdout).toMatch(
      /^ {4}interface tun0\b.*: the guest refused it: .*\/dev\/net\/tun.*$/m,
    );
    expect(s.stdout).toMatch(/^ {4}route 10\.99\.0\.0\/16 dev tun0\b.*tun0.*$/m);
    expect((await guestNs.json("link", "show")).map((l) => l.ifname)).toEqual(["lo", "eth0"]);
    const main = (ns: Netns) => ns.json<unknown[]>("route", "show", "table", "main", "dev", "eth0");
    expect(await main(guestNs)).toEqual(await main(pod));
  });
});

describe("sync: tun devices are carried: an Apply that fails, bad input", () => {
  it("an Apply that fails after making a tun leaves the guest as it was; bad input changes nothing", async () => {
    const p = await pair();
    const client = await AgentClient.connect(p.guest.addr);
    cleanups.push(async () => client.close());
    const state = async () =>
      [await snapshot(p.guest.ns), ...(await allRoutes(p.guest.ns)), ...(await rules(p.guest.ns))]
        .join("\n")
        .replaceAll(/"operstate":"[A-Z]+",/g, "");
    await waitFor(async () => (await p.guest.ns.json("addr", "show", "gst0")).length > 0, {
      what: "gst0",
    });
    const before = await state();
    const tun = (
      extra: {
        name?: string;
        mac?: string;
        addresses?: { address: string; prefix: number }[];
        tuntap?: { mode: string; user?: number };
      } = {},
    ) =>
      create(InterfaceSchema, {
        name: "tun9",
        mtu: 1400,
        up: true,
        noarp: true,
        addresses: [{ address: "10.9.0.1", prefix: 24 }],
        tuntap: { mode: "tun" },
        ...extra,
      });
    const apply = (interfaces: Interface[], routes = [] as ReturnType<typeof route>[]) =>
      client.unary(
        Network.method.apply,
        create(ApplyRequestSchema, {
          desired: create(StateSchema, { interfaces, routes }),
        }),
      );
    const route = (dest: string, gateway: string) =>
      create(RouteSchema, { table: 254, family: 4, dest, gateway, device: "tun9", metric: 0 });
    const refused = async (run: Promise<unknown>): Promise<TtrpcError> => {
      const err = (await run.then(
        () => undefined,
        (e: unknown) => e,
      )) as TtrpcError;
      expect(err, "the call succeeded").toBeDefined();
      return err;
    };
    // The kernel refuses the route after tun9 was made and configured.
    const failed = await refused(apply([tun()], [route("10.200.0.0/16", "10.55.0.1")]));
    expect(failed.message).toMatch(/10\.200\.0\.0\/16/);
    expect(await state()).toBe(before);
    // Bad input: named field and value, nothing made.
    const bad: [Interface[], RegExp][] = [
      [[tun({ tuntap: { mode: "tux" } })], /desired\.interfaces\[0\]\.tuntap\.mode: "tux"/],
      [[tun({ name: "" })], /desired\.interfaces\[0\]\.name: ""/],
      [[tun({ mac: "02:00:00:00:00:01" })], /desired\.interfaces\[0\]\.mac: "02:00:00:00:00:01"/],
      [[tun({ tuntap: { mode: "tun", user: 0xffffffff } })], /tuntap\.user: 4294967295/],
      [[tun({ name: "gst0" })], /desired\.interfaces\[0\]\.name: "gst0"/],
      [
        Array.from({ length: 65 }, (_, i) => tun({ name: `tun${i}`, addresses: [] })),
        /desired\.interfaces: 65 tun\/tap devices: at most 64/,
      ],
    ];
    for (const [interfaces, message] of bad) {
      const err = await refused(apply(interfaces));
      expect(err.message).toMatch(message);
      expect(await state()).toBe(before);
    }
    expect([Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION]).toContain(
      (await refused(apply([tun({ name: "gst0" })]))).code,
    );
  });
});
