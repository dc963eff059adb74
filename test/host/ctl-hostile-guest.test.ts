/**
 * dist/netagentctl against a compromised guest and hostile input:
 * - a stand-in agent (the real AgentServer on a unix socket, with handlers
 *   that answer terminal escapes, newlines, C1 and bidi controls in every
 *   string) — the human output holds no control character but newlines,
 *   each value stays on its line, and --json output parses back to exactly
 *   the guest's strings;
 * - `--file` refuses a FIFO (without waiting for a writer), /dev/zero and a
 *   directory, and caps a file and stdin at 16 MiB (exit 2, nothing sent);
 * - `--netns` refuses invalid names before anything runs.
 */
import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_REGISTRY_OPTIONS } from "../../src/agent/server/registry-options";
import { AgentServer } from "../../src/agent/server/server";
import { createLogger } from "../../src/common/log";
import { AgentService } from "../../src/gen/agent_pb";
import { Health } from "../../src/gen/health_pb";
import { IPFamily } from "../../src/gen/types_pb";
import { listenUnix } from "../../src/transport/socket-listener";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { ServiceRegistry } from "../../src/ttrpc/service";
import { type TempDir, tempDir } from "../helpers/tmp";
import { ctl, NETAGENTCTL } from "./helpers";

/** What a compromised guest might put in its strings. */
const EVIL = "\x1b]0;owned\x07\x1b[2J\r\nFAKE ROW\u009b31m\u202egnp.exe\x7f";

let dir: TempDir;
let server: AgentServer;
let addr: string;

beforeAll(async () => {
  dir = tempDir("netagent-ctl-hostile-");
  const socket = dir.join("agent.sock");
  const iface = {
    name: `eth0${EVIL}`,
    hwAddr: `02:00:00:00:00:01${EVIL}`,
    mtu: 1500n,
    IPAddresses: [{ family: IPFamily.v4, address: `10.0.0.2${EVIL}`, mask: "24" }],
  };
  const registry = new ServiceRegistry(AGENT_REGISTRY_OPTIONS)
    .register(Health, {
      check: () => ({ status: 1 }),
      version: () => ({ agentVersion: `1.0${EVIL}`, grpcVersion: "0.0.1" }),
    })
    .register(AgentService, {
      listInterfaces: () => ({ Interfaces: [iface] }),
      listRoutes: () => ({
        Routes: [{ dest: `10.0.0.0/24${EVIL}`, device: `eth0${EVIL}`, family: IPFamily.v4 }],
      }),
      getIPTables: () => ({
        data: new TextEncoder().encode(
          `*filter\n-A INPUT -m comment --comment "${EVIL}"\nCOMMIT\n`,
        ),
      }),
      updateRoutes: () => {
        throw new TtrpcError(`route refused${EVIL}`, Code.INVALID_ARGUMENT);
      },
    });
  server = new AgentServer({ registry, log: createLogger("error"), maxConnections: 8 });
  server.addListener(await listenUnix(socket, server.accept));
  addr = `unix://${socket}`;
});

afterAll(async () => {
  await server?.shutdown(1000);
  dir?.remove();
});

// Every C0 control but the newline, DEL, C1, the bidi controls and U+2028/9.
const RAW_CONTROL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters the output must not hold
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe("strings from the guest", () => {
  it.each([["list-interfaces"], ["list-routes"], ["version"]])(
    "%s: printed escaped, one line per row",
    async (command) => {
      const r = await ctl(["--addr", addr, ...command.split(" ")]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toMatch(RAW_CONTROL);
      expect(r.stdout).toContain(
        "\\u001b]0;owned\\u0007\\u001b[2J\\u000d\\u000aFAKE ROW\\u009b31m\\u202e",
      );
      expect(r.stdout).not.toMatch(/^FAKE ROW/m);
    },
  );

  it("iptables get: the guest's text with every control but the newline escaped", async () => {
    const r = await ctl(["--addr", addr, "iptables", "get"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain('--comment "\\u001b]0;owned\\u0007\\u001b[2J\\u000d\nFAKE ROW');
  });

  it.each([["list-interfaces"], ["list-routes"], ["version"]])(
    "%s --json: valid JSON holding exactly the guest's strings",
    async (command) => {
      const r = await ctl(["--addr", addr, "--json", command]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toMatch(RAW_CONTROL);
      const json = JSON.stringify(JSON.parse(r.stdout));
      expect(json).toContain(JSON.stringify(EVIL).slice(1, -1));
    },
  );

  it("an error message from the guest is escaped on stderr", async () => {
    const file = dir.join("routes.json");
    writeFileSync(file, "[]");
    const r = await ctl(["--addr", addr, "update-routes", "--file", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(RAW_CONTROL);
    expect(r.stderr).toContain("INVALID_ARGUMENT: route refused\\u001b]0;owned");
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
  });

  it("call: the guest's answer and error keep their newlines escaped", async () => {
    const err = await ctl(["--addr", addr, "call", "grpc.AgentService", "UpdateRoutes"]);
    expect(err.code).toBe(1);
    expect(err.stderr).not.toMatch(RAW_CONTROL);
    expect(err.stderr).toContain(
      "INVALID_ARGUMENT: route refused\\u001b]0;owned\\u0007\\u001b[2J\\u000d\\u000aFAKE ROW",
    );
    expect(err.stderr.trimEnd().split("\n")).toHaveLength(1);
    const ok = await ctl(["--addr", addr, "call", "grpc.Health", "Version"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).not.toMatch(RAW_CONTROL);
    expect(ok.stdout).not.toMatch(/^FAKE ROW/m);
    expect(JSON.parse(ok.stdout).agentVersion).toBe(`1.0${EVIL}`);
  });
});

describe("--file", () => {
  it("iptables set --file refuses /dev/zero too", async () => {
    const r = await ctl(
      ["--addr", addr, "iptables", "set", "--file", "/dev/zero"],
      undefined,
      20_000,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--file /dev/zero: not a regular file (a character device)");
  });

  it("refuses a FIFO without waiting for a writer", async () => {
    const fifo = dir.join("fifo");
    execFileSync("mkfifo", [fifo]);
    const r = await ctl(["--addr", addr, "update-routes", "--file", fifo], undefined, 20_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--file ${fifo}: not a regular file (a FIFO)`);
  });

  it.each([
    ["/dev/zero", "not a regular file (a character device)"],
    ["/", "not a regular file (a directory)"],
  ])("refuses %s", async (path, why) => {
    const r = await ctl(["--addr", addr, "update-routes", "--file", path], undefined, 20_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--file ${path}: ${why}`);
  });

  it("refuses a file over 16 MiB, and stdin over 16 MiB", async () => {
    const big = dir.join("big.json");
    const size = 16 * 1024 * 1024 + 1;
    writeFileSync(big, Buffer.alloc(size, 0x20));
    const r = await ctl(["--addr", addr, "update-routes", "--file", big]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--file ${big}: ${size} bytes, more than the limit of 16777216`);

    // stdin from /dev/zero: endless, cut at the cap.
    const z = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const p = spawn("/bin/sh", [
        "-c",
        'exec "$1" --addr "$2" update-routes --file - </dev/zero',
        "sh",
        NETAGENTCTL,
        addr,
      ]);
      let stderr = "";
      p.stderr.setEncoding("utf8").on("data", (s: string) => {
        stderr += s;
      });
      p.on("close", (code) => resolve({ code, stderr }));
    });
    expect(z.code).toBe(2);
    expect(z.stderr).toContain("--file -: stdin holds more than the limit of 16777216 bytes");
  });

  it("still reads a regular file and stdin", async () => {
    const r = await ctl(["--addr", addr, "update-routes", "--file", "-"], "[]");
    // Read and sent: the stand-in refuses it.
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("INVALID_ARGUMENT: route refused");
  });
});

describe("--netns", () => {
  it.each([
    ["..", /invalid name "\.\."/],
    [".", /invalid name "\."/],
    ["a b", /invalid name "a b"/],
    ["nt-i16c-no-such-ns", /no network namespace named "nt-i16c-no-such-ns" in \/run\/netns/],
  ])("refuses %j before anything runs", async (value, why) => {
    const r = await ctl(["--addr", addr, "diff", "--netns", value]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(why);
  });
});
