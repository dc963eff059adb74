/**
 * Every subcommand's bad-input path against a configured guest: a clear
 * message (the status code name for the agent's refusals), a non-zero exit
 * code as documented, and nothing changed in the guest (`ip -json` links,
 * addresses, routes of both families and permanent neighbours compared
 * before and after). Also `--help` on every subcommand.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TempDir } from "../helpers/tmp";
import { ctl, Guest, randomMac, snapshot, tempDir, waitFor, writeJson } from "./helpers";

const SUBCOMMANDS = [
  "sync",
  "diff",
  "list-interfaces",
  "list-routes",
  "update-routes",
  "update-interface",
  "add-neighbors",
];

let guest: Guest;
let dir: TempDir;
let before: string;
const mac = randomMac();
const f: Record<string, string> = {};

beforeAll(async () => {
  guest = await Guest.create(mac, "bad0");
  dir = tempDir();
  const good = writeJson(dir, "good.json", {
    cniVersion: "1.0.0",
    interfaces: [{ name: "eth0", mac, sandbox: "/x" }],
    ips: [{ interface: 0, address: "10.66.0.2/24", gateway: "10.66.0.1" }],
    routes: [{ dst: "0.0.0.0/0" }, { dst: "198.18.0.0/24" }],
  });
  const sync = await ctl(["--addr", guest.addr, "sync", "--cni-result", good]);
  expect(sync.code, sync.stderr).toBe(0);
  const neigh = writeJson(dir, "neigh.json", [
    { toIPAddress: { address: "10.66.0.1" }, device: "eth0", lladdr: "02:00:00:00:66:01" },
  ]);
  expect((await ctl(["--addr", guest.addr, "add-neighbors", "--file", neigh])).code).toBe(0);

  const file = (name: string, content: unknown) => {
    f[name] = writeJson(dir, name, content);
  };
  file("not-json", "{ this is not json");
  file("empty-object", {});
  file("cni-bad-mac", {
    cniVersion: "1.0.0",
    interfaces: [{ name: "eth0", mac: "zz", sandbox: "/x" }],
  });
  file("cni-old", { cniVersion: "0.2.0", ip4: { ip: "10.0.0.2/24" } });
  file("cni-bad-ip", {
    cniVersion: "1.0.0",
    interfaces: [{ name: "eth0", mac, sandbox: "/x" }],
    ips: [{ interface: 0, address: "10.66.0.300/24" }],
  });
  file("cni-low-mtu", {
    cniVersion: "1.1.0",
    interfaces: [{ name: "eth0", mac, sandbox: "/x", mtu: 10 }],
    ips: [{ interface: 0, address: "10.66.0.9/24" }],
  });
  file("routes-unknown-field", [{ dst: "10.0.0.0/8" }]);
  file("routes-bad-gateway", [{ dest: "", gateway: "1.2.3", device: "eth0" }]);
  file("routes-no-device", [{ dest: "192.0.2.0/24", device: "nosuch0" }]);
  // The first route is fine, the second fails in the kernel: all or nothing.
  file("routes-unreachable", [
    { dest: "203.0.113.0/24", gateway: "10.66.0.1", device: "eth0" },
    { dest: "", gateway: "203.0.114.1", device: "eth0" },
  ]);
  file("iface-bad-mac", { hwAddr: "zz:00", name: "eth0" });
  file("iface-low-mtu", { interface: { hwAddr: mac, name: "eth0", mtu: 10 } });
  file("iface-missing", { hwAddr: randomMac(), name: "eth9" });
  file("neigh-bad-mac", [
    { toIPAddress: { address: "10.66.0.7" }, device: "eth0", lladdr: "nope" },
  ]);
  file("neigh-no-device", [
    { toIPAddress: { address: "10.66.0.7" }, device: "nosuch0", lladdr: "02:00:00:00:00:07" },
  ]);
  // The sync renamed the NIC (down and up): its carrier comes back by itself, a moment later.
  await waitFor(
    async () =>
      (await guest.ns.json<{ operstate: string }[]>("link", "show", "eth0"))[0]?.operstate === "UP",
    { what: "eth0's carrier back after the rename" },
  );
  before = await snapshot(guest.ns);
});
afterAll(async () => {
  await guest?.remove();
  dir?.remove();
});

const unreachable = "unix:///nonexistent/netagent-test.sock";
// [case, args (after --addr), expected exit code, stderr pattern]
const cases: [string, () => string[], number, RegExp, string?][] = [
  ["sync: no pod", () => ["sync"], 2, /give exactly one of --netns and --cni-result/],
  [
    "sync: both pods",
    () => ["sync", "--netns", "x", "--cni-result", f["not-json"] as string],
    2,
    /exactly one/,
  ],
  [
    "sync: unknown netns",
    () => ["sync", "--netns", "nh5-no-such-ns"],
    2,
    /no network namespace named "nh5-no-such-ns" in \/run\/netns/,
  ],
  [
    "sync: missing netns path",
    () => ["sync", "--netns", "/nonexistent/ns/net"],
    2,
    /--netns: \/nonexistent\/ns\/net: no such file/,
  ],
  [
    "sync: missing result file",
    () => ["sync", "--cni-result", "/nonexistent.json"],
    2,
    /--cni-result \/nonexistent.json: ENOENT/,
  ],
  ["sync: result not JSON", () => ["sync", "--cni-result", f["not-json"] as string], 2, /not JSON/],
  [
    "sync: result with a bad MAC",
    () => ["sync", "--cni-result", f["cni-bad-mac"] as string],
    2,
    /interfaces\[0\]\.mac: "zz" is not a MAC address/,
  ],
  [
    "sync: pre-0.3 result",
    () => ["sync", "--cni-result", f["cni-old"] as string],
    2,
    /cniVersion: "0\.2\.0" is not supported/,
  ],
  [
    "sync: result with a bad address",
    () => ["sync", "--cni-result", f["cni-bad-ip"] as string],
    2,
    /ips\[0\]\.address: "10\.66\.0\.300" is not an IP address/,
  ],
  [
    "sync: agent refuses MTU 10",
    () => ["sync", "--cni-result", f["cni-low-mtu"] as string],
    1,
    /^netagentctl sync: INVALID_ARGUMENT: interface\.mtu: 10 is below 68/,
  ],
  [
    "sync: bad --attempts",
    () => ["sync", "--attempts", "0", "--cni-result", f["cni-low-mtu"] as string],
    2,
    /--attempts: "0" is not a count/,
  ],
  ["sync: unknown option", () => ["sync", "--frobnicate"], 2, /unknown option --frobnicate/],
  [
    "sync: agent unreachable",
    () => ["sync", "--cni-result", f["cni-low-mtu"] as string],
    1,
    /^netagentctl sync: UNAVAILABLE: connect /,
    unreachable,
  ],
  ["diff: no pod", () => ["diff"], 2, /give exactly one/],
  [
    "diff: unknown netns",
    () => ["diff", "--netns", "nh5-no-such-ns"],
    2,
    /no network namespace named/,
  ],
  [
    "diff: agent unreachable",
    () => ["diff", "--cni-result", f["cni-low-mtu"] as string],
    3,
    /^netagentctl diff: UNAVAILABLE: connect /,
    unreachable,
  ],
  [
    "list-interfaces: stray argument",
    () => ["list-interfaces", "eth0"],
    2,
    /unexpected argument "eth0"/,
  ],
  ["list-routes: unknown option", () => ["list-routes", "--all"], 2, /unknown option --all/],
  [
    "list-routes: agent unreachable",
    () => ["list-routes"],
    1,
    /^netagentctl list-routes: UNAVAILABLE: connect /,
    unreachable,
  ],
  ["update-routes: no --file", () => ["update-routes"], 2, /--file FILE is required/],
  [
    "update-routes: missing file",
    () => ["update-routes", "--file", "/nonexistent.json"],
    2,
    /ENOENT/,
  ],
  [
    "update-routes: not JSON",
    () => ["update-routes", "--file", f["not-json"] as string],
    2,
    /not JSON/,
  ],
  [
    "update-routes: {}",
    () => ["update-routes", "--file", f["empty-object"] as string],
    2,
    /expected \{"routes":\{"Routes":\[\.\.\.\]\}\}/,
  ],
  [
    "update-routes: unknown field",
    () => ["update-routes", "--file", f["routes-unknown-field"] as string],
    2,
    /"dst"/,
  ],
  [
    "update-routes: bad gateway",
    () => ["update-routes", "--file", f["routes-bad-gateway"] as string],
    1,
    /^netagentctl update-routes: INVALID_ARGUMENT: routes\[0\]\.gateway: "1\.2\.3"/,
  ],
  [
    "update-routes: no such device",
    () => ["update-routes", "--file", f["routes-no-device"] as string],
    1,
    /^netagentctl update-routes: NOT_FOUND: Link not found \(routes\[0\]\.device nosuch0\)/,
  ],
  [
    "update-routes: kernel refuses the 2nd route",
    () => ["update-routes", "--file", f["routes-unreachable"] as string],
    1,
    /^netagentctl update-routes: INVALID_ARGUMENT: route 0\.0\.0\.0\/0 via 203\.0\.114\.1 dev eth0: Nexthop has invalid gateway/,
  ],
  [
    "update-interface: not JSON",
    () => ["update-interface", "--file", f["not-json"] as string],
    2,
    /not JSON/,
  ],
  [
    "update-interface: bad MAC",
    () => ["update-interface", "--file", f["iface-bad-mac"] as string],
    1,
    /^netagentctl update-interface: INVALID_ARGUMENT: interface\.hwAddr: "zz:00"/,
  ],
  [
    "update-interface: MTU 10",
    () => ["update-interface", "--file", f["iface-low-mtu"] as string],
    1,
    /INVALID_ARGUMENT: interface\.mtu: 10 is below 68/,
  ],
  [
    "update-interface: no such link",
    () => ["--timeout", "3", "update-interface", "--file", f["iface-missing"] as string],
    1,
    /^netagentctl update-interface: NOT_FOUND: Link not found \(hwAddr /,
  ],
  [
    "add-neighbors: {}",
    () => ["add-neighbors", "--file", f["empty-object"] as string],
    2,
    /expected/,
  ],
  [
    "add-neighbors: bad lladdr",
    () => ["add-neighbors", "--file", f["neigh-bad-mac"] as string],
    1,
    /^netagentctl add-neighbors: INVALID_ARGUMENT: neighbors\[0\]\.lladdr: "nope"/,
  ],
  [
    "add-neighbors: no such device",
    () => ["add-neighbors", "--file", f["neigh-no-device"] as string],
    1,
    /^netagentctl add-neighbors: NOT_FOUND: Link not found \(neighbors\[0\]\.device nosuch0\)/,
  ],
];

describe("bad input: clear message, non-zero exit, guest unchanged", () => {
  it.each(cases)("%s", async (_name, args, code, pattern, addr) => {
    const r = await ctl(["--addr", addr ?? guest.addr, ...args()]);
    expect(r.stderr).toMatch(pattern);
    expect(r.code, r.stderr).toBe(code);
    expect(r.stdout).toBe("");
    expect(await snapshot(guest.ns)).toBe(before);
  });

  it.each(SUBCOMMANDS)("%s --help: its usage, exit 0, nothing sent", async (name) => {
    const r = await ctl(["--addr", unreachable, name, "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith(`usage: netagentctl ${name} `)).toBe(true);
    expect(r.stdout).toMatch(/Exit codes/);
  });

  it("the guest is still what the first sync made it", async () => {
    const r = await ctl(["--addr", guest.addr, "--json", "list-routes"]);
    expect(r.code).toBe(0);
    const dests = (JSON.parse(r.stdout) as { Routes: { dest: string }[] }).Routes.map(
      (x) => x.dest,
    );
    expect(dests).toContain("198.18.0.0/24");
    expect(dests).toContain("0.0.0.0/0");
  });
});
