/**
 * netagentctl against a compromised guest's Read and RouteGet (a stand-in
 * agent: the real AgentServer with handlers that answer what the test
 * sets): malformed JSON, nesting without end, a listing it does not know,
 * fewer decisions than lookups, no Read at all. Each is a clear "could not
 * compare" (exit 3) naming what was wrong, never a crash and never EQUAL;
 * strings the guest chooses (a link named with terminal escapes) come out
 * escaped in the rows, and --json keeps them exactly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_REGISTRY_OPTIONS } from "../../src/agent/server/registry-options";
import { AgentServer } from "../../src/agent/server/server";
import { createLogger } from "../../src/common/log";
import { AgentService } from "../../src/gen/agent_pb";
import { Health } from "../../src/gen/health_pb";
import { Network } from "../../src/gen/network_pb";
import { LISTING_NAMES } from "../../src/net/iproute/complete-listings";
import { listenUnix } from "../../src/transport/socket-listener";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { type TempDir, tempDir } from "../helpers/tmp";
import { ctl, Netns } from "./helpers";

const EVIL = "eth0\x1b]0;owned\x07\x1b[2J\r\nFAKE ROW\u009b31m\u202e";
const RAW_CONTROL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters the output must not hold
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

type Listing = { name: string; output: string; error?: string };
let listings: () => Listing[];
let decisions: () => { route: string; error: string }[];
let dir: TempDir;
let server: AgentServer;
let bare: AgentServer;
let addr: string;
let bareAddr: string;
let pod: Netns;

const empty = (): Listing[] =>
  LISTING_NAMES.map((name) => ({ name, output: name.startsWith("route-text") ? "" : "[]" }));

beforeAll(async () => {
  dir = tempDir("netagent-ctl-hostile-read-");
  pod = await Netns.create("n22hp");
  const kata = {
    listInterfaces: () => ({ Interfaces: [] }),
    listRoutes: () => ({ Routes: [] }),
  };
  const registry = new ServiceRegistry(AGENT_REGISTRY_OPTIONS)
    .register(Health, { check: () => ({ status: 1 }) })
    .register(AgentService, kata)
    .register(Network, {
      read: () => ({ listings: listings(), sysctls: [], freshSysctls: [] }),
      routeGet: () => ({ decisions: decisions() }),
    });
  server = new AgentServer({ registry, log: createLogger("error"), maxConnections: 8 });
  server.addListener(await listenUnix(dir.join("agent.sock"), server.accept));
  addr = `unix://${dir.join("agent.sock")}`;
  const none = new ServiceRegistry(AGENT_REGISTRY_OPTIONS)
    .register(Health, { check: () => ({ status: 1 }) })
    .register(AgentService, kata);
  bare = new AgentServer({ registry: none, log: createLogger("error"), maxConnections: 8 });
  bare.addListener(await listenUnix(dir.join("bare.sock"), bare.accept));
  bareAddr = `unix://${dir.join("bare.sock")}`;
});

afterAll(async () => {
  await server?.shutdown(1000);
  await bare?.shutdown(1000);
  await pod?.remove();
  dir?.remove();
});

const diff = (...extra: string[]) => ctl(["--addr", addr, ...extra, "diff", "--netns", pod.name]);

describe("a guest's Read that cannot be used: could not compare (exit 3)", () => {
  const cases: [string, () => Listing[], RegExp][] = [
    [
      "a listing that is not JSON",
      () => empty().map((l) => (l.name === "link" ? { ...l, output: '[{"ifname":' } : l)),
      /the guest's link listing is not JSON/,
    ],
    [
      "nesting without end",
      () => empty().map((l) => (l.name === "route4" ? { ...l, output: "[".repeat(200_000) } : l)),
      /the guest's route4 listing nests deeper than 16 levels/,
    ],
    [
      "entries that are no objects",
      () => empty().map((l) => (l.name === "rule4" ? { ...l, output: "[1,2]" } : l)),
      /the guest's rule4 listing holds an entry that is not an object/,
    ],
    [
      "a listing netagentctl does not know",
      () => [...empty(), { name: `x${EVIL}`, output: "[]" }],
      /the guest's read has a listing this netagentctl does not know/,
    ],
    [
      "a listing missing",
      () => empty().filter((l) => l.name !== "address"),
      /the guest's read has no address listing/,
    ],
    [
      "routes its text does not match",
      () =>
        empty().map((l) => (l.name === "route4" ? { ...l, output: '[{"dst":"10.0.0.0/8"}]' } : l)),
      /the guest's routes \(inet\) changed between the JSON and the text listing/,
    ],
  ];
  for (const [what, make, why] of cases) {
    it(what, async () => {
      listings = make;
      const r = await diff();
      expect(r.code, r.stdout + r.stderr).toBe(3);
      expect(r.stderr).toMatch(why);
      expect(r.stdout).toBe("");
      expect(r.stderr).not.toMatch(RAW_CONTROL);
    });
  }

  it("an agent without Read: could not compare completely, never EQUAL", async () => {
    const r = await ctl(["--addr", bareAddr, "diff", "--netns", pod.name]);
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(r.stderr).toMatch(
      /could not compare completely: the agent has no netagent\.v1\.Network Read/,
    );
  });
});

describe("strings the guest chooses", () => {
  it("come out escaped in the rows, one line each; --json keeps them exactly", async () => {
    listings = () =>
      empty().map((l) =>
        l.name === "link"
          ? { ...l, output: JSON.stringify([{ ifname: EVIL, link_type: "none", mtu: 1500 }]) }
          : l,
      );
    const r = await diff();
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).not.toMatch(/^FAKE ROW/m);
    expect(r.stdout).toMatch(
      /^> +not mirrored: link eth0\\u001b\]0;owned\\u0007\\u001b\[2J\\u000d\\u000aFAKE ROW\\u009b31m\\u202e \(guest only\)/m,
    );
    const j = await diff("--json");
    expect(j.stdout).not.toMatch(RAW_CONTROL);
    const found = (JSON.parse(j.stdout) as { notMirrored: { what: string }[] }).notMirrored;
    expect(found.map((f) => f.what)).toContain(`link ${EVIL}`);
  });
});

describe("a guest's RouteGet that cannot be used: could not ask (exit 3)", () => {
  const cases: [string, () => { route: string; error: string }[], RegExp][] = [
    [
      "a route that is not JSON",
      () => [{ route: "{", error: "" }],
      /the guest's answer to route get 10\.0\.0\.1 is not JSON/,
    ],
    [
      "a route that is no object",
      () => [{ route: "[]", error: "" }],
      /the guest's answer to route get 10\.0\.0\.1 is not a JSON object/,
    ],
    [
      "neither a route nor a refusal",
      () => [{ route: "", error: "" }],
      /is neither a route nor a refusal/,
    ],
    [
      "a refusal past its bound",
      () => [{ route: "", error: "x".repeat(600) }],
      /is neither a route nor a refusal/,
    ],
    ["fewer decisions than lookups", () => [], /the guest answered 0 decisions for 1 lookups/],
  ];
  for (const [what, make, why] of cases) {
    it(what, async () => {
      decisions = make;
      const r = await ctl(["--addr", addr, "route-get", "--netns", pod.name, "10.0.0.1"]);
      expect(r.code, r.stdout + r.stderr).toBe(3);
      expect(r.stderr).toMatch(why);
    });
  }

  it("a refusal with terminal escapes is printed escaped", async () => {
    decisions = () => [{ route: "", error: EVIL }];
    const r = await ctl(["--addr", addr, "route-get", "--netns", pod.name, "10.0.0.1"]);
    expect(r.code).toBe(1);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain("refused: eth0\\u001b]0;owned");
  });
});
