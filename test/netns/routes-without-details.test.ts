/**
 * Route listings read without -details (ip-dispatch.ts `details: false`)
 * parse to exactly the routes read with it: iproute2 leaves out the values
 * it takes as defaults (type unicast, table main, protocol boot, scope
 * global, metric 0) and parse-ip-json.ts reads them back as the same
 * defaults. Checked with the real iproute2 on routes of every kind a pod
 * or the kernel makes, in a fresh netns.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { splitJsonDocuments } from "../../src/net/parse/json-documents";
import { parseAllTableRoutes, parseRoutes } from "../../src/net/parse/parse-ip-json";
import { Netns } from "../helpers/netns";

let ns: Netns;

beforeAll(async () => {
  ns = await Netns.create("nt-nodet");
  await ns.veth("eth0", "peer0");
  const ip = (...a: string[]) => ns.ip(...a);
  await ip("addr", "add", "10.0.0.2/24", "dev", "eth0");
  await ip("addr", "add", "192.0.2.2/24", "dev", "eth0");
  await ip("addr", "add", "fd00:1::2/64", "dev", "eth0", "nodad");
  await ip("route", "add", "default", "via", "10.0.0.1", "dev", "eth0", "proto", "dhcp");
  await ip(
    "route",
    "add",
    "198.51.100.0/24",
    "via",
    "10.0.0.1",
    "proto",
    "static",
    "metric",
    "50",
    "mtu",
    "1400",
  );
  await ip(
    "route",
    "add",
    "203.0.113.0/24",
    "dev",
    "eth0",
    "scope",
    "link",
    "proto",
    "99",
    "src",
    "10.0.0.2",
  );
  await ip("route", "add", "10.9.0.0/16", "via", "10.0.0.1", "dev", "eth0");
  await ip("route", "add", "10.10.0.0/16", "via", "10.9.9.9", "dev", "eth0", "onlink");
  await ip("route", "add", "blackhole", "10.200.0.0/16");
  await ip("route", "add", "unreachable", "10.201.0.0/16");
  await ip("route", "add", "prohibit", "10.202.0.0/16");
  await ip("route", "add", "10.204.0.0/16", "via", "10.0.0.1", "table", "100");
  await ip("-6", "route", "add", "default", "dev", "eth0", "metric", "1024");
  await ip("-6", "route", "add", "fd00:2::/64", "via", "fd00:1::1", "dev", "eth0", "proto", "dhcp");
  await ip("-6", "route", "add", "blackhole", "fd00:3::/64");
});

afterAll(async () => {
  await ns?.remove();
});

it("parses every route the same with and without -details", async () => {
  const read = async (...opts: string[]) =>
    splitJsonDocuments(await ns.ip("-json", ...opts, "route", "show", "table", "all"))[0];
  // The kernel adds routes of its own while the test runs (the link-local
  // address's local route once its DAD ends, later under load): compare a
  // plain read only with detailed reads before and after it that agree.
  let detailed: unknown;
  let plain: unknown;
  for (let attempt = 0; ; attempt++) {
    const before = await read("-details");
    plain = await read();
    detailed = await read("-details");
    const same =
      JSON.stringify(parseAllTableRoutes(before)) === JSON.stringify(parseAllTableRoutes(detailed));
    if (same) break;
    if (attempt === 20) throw new Error("the route table kept changing over 20 reads");
    // not a wait: the pause between reads of a wait bounded at 20 reads for a steady table
    await new Promise((r) => setTimeout(r, 250));
  }
  const main = parseRoutes(detailed);
  const all = parseAllTableRoutes(detailed);
  expect(main.length).toBeGreaterThanOrEqual(12);
  expect(all.map((r) => r.table)).toContain(100);
  expect(new Set(main.map((r) => r.type))).toEqual(
    new Set(["unicast", "blackhole", "unreachable", "prohibit"]),
  );
  expect(parseRoutes(plain)).toEqual(main);
  expect(parseAllTableRoutes(plain)).toEqual(all);
});
