/** Agent configuration from flags and the kernel command line, table-driven. */
import { describe, expect, it } from "vitest";
import { ConfigError, parseArgs, parseCmdline, USAGE } from "../../src/agent/config/config";
import * as limits from "../../src/common/limits";
import { VMADDR_CID_ANY } from "../../src/transport/address";

function run(argv: string[], cmdline = "") {
  const parsed = parseArgs(argv, cmdline);
  if (parsed.kind !== "run") throw new Error(`expected run, got ${parsed.kind}`);
  return parsed.config;
}

describe("parseCmdline", () => {
  it.each([
    ["", {}],
    ["quiet console=ttyS0", {}],
    ["agent.server_addr=vsock://-1:1024", { listen: "vsock://-1:1024" }],
    [
      "ro agent.log=debug  agent.server_addr=unix:///a\n",
      { listen: "unix:///a", logLevel: "debug" },
    ],
    // Later words win, as the kernel passes them in order.
    ["agent.log=info agent.log=warn", { logLevel: "warn" }],
    // Other agent.* keys and look-alikes are not ours.
    ["agent.debug_console agent.trace=true xagent.log=debug", {}],
    // Kernel quoting: a quoted word belongs to its parameter (x here)...
    ['x="a agent.log=debug" agent.server_addr=unix:///b', { listen: "unix:///b" }],
    // ...and quotes around a value or the whole parameter are not part of it.
    [
      'agent.server_addr="unix:///a b" "agent.log=warn"',
      { listen: "unix:///a b", logLevel: "warn" },
    ],
    // Words after a bare -- are init's arguments, not parameters.
    ["quiet -- agent.log=debug", {}],
    // The value may itself contain "=".
    ["agent.server_addr=unix:///a=b", { listen: "unix:///a=b" }],
    [
      "netagent.listen=vsock://-1:1024 netagent.upstream=unix:///run/kata-agent.sock",
      { netagentListen: "vsock://-1:1024", upstream: "unix:///run/kata-agent.sock" },
    ],
    // Look-alikes are not ours either.
    ["netagent.upstreamx=unix:///a xnetagent.listen=unix:///b", {}],
  ])("reads %j", (cmdline, raw) => {
    expect(parseCmdline(cmdline)).toEqual(raw);
  });
});

describe("parseArgs", () => {
  it("takes --ip-bin only as a flag", () => {
    expect(run(["--ip-bin", "/opt/fake-ip"]).ipBin).toBe("/opt/fake-ip");
    expect(run([], "agent.ip_bin=/x ip_bin=/x --ip-bin=/x").ipBin).toBeUndefined();
  });

  it("defaults to vsock://-1:1024, info, 64 connections", () => {
    expect(run([])).toEqual({
      listen: { kind: "vsock", cid: VMADDR_CID_ANY, port: 1024 },
      listenText: "vsock://-1:1024",
      logLevel: "info",
      maxConnections: 64,
      shutdownGraceMs: 5000,
      ipSession: true,
      stateDir: "/run/netagent",
      policy: {},
    });
  });

  it("takes --state-dir as an absolute path, only as a flag", () => {
    expect(run(["--state-dir", "/tmp/s"]).stateDir).toBe("/tmp/s");
    expect(run([], "netagent.state_dir=/x --state-dir=/x").stateDir).toBe("/run/netagent");
    expect(() => run(["--state-dir", "rel"])).toThrow(/--state-dir: invalid value "rel"/);
  });

  it("takes --ip-session on or off, nothing else", () => {
    expect(run(["--ip-session", "off"]).ipSession).toBe(false);
    expect(run(["--ip-session=on"]).ipSession).toBe(true);
    expect(() => run(["--ip-session", "yes"])).toThrow(/--ip-session: invalid value "yes"/);
  });

  it.each([
    [["--listen", "unix:///tmp/a.sock"], "", "unix:///tmp/a.sock"],
    [["--listen=unix:///tmp/a.sock"], "", "unix:///tmp/a.sock"],
    [[], "agent.server_addr=serial://agent.channel.0", "serial://agent.channel.0"],
    [["--listen", "vsock://3:5"], "agent.server_addr=unix:///x", "vsock://3:5"],
  ])("takes the address from flags over the command line: %j %j", (argv, cmdline, text) => {
    expect(run(argv, cmdline).listenText).toBe(text);
  });

  describe("front mode", () => {
    const kata = "agent.server_addr=vsock://-1:1025";
    it.each([
      // An upstream alone: the shim's address, never agent.server_addr (the agent's behind).
      [["--upstream", "unix:///run/a.sock"], kata, "vsock://-1:1024", "unix:///run/a.sock"],
      [[], `${kata} netagent.upstream=vsock://1:1025`, "vsock://-1:1024", "vsock://1:1025"],
      [
        [],
        `netagent.listen=unix:///l ${kata} netagent.upstream=unix:///u`,
        "unix:///l",
        "unix:///u",
      ],
      // Flags win over the command line, for both.
      [
        ["--listen", "unix:///f", "--upstream=unix:///g"],
        "netagent.listen=unix:///l netagent.upstream=unix:///u",
        "unix:///f",
        "unix:///g",
      ],
    ])("%j %j listens on %s, forwards to %s", (argv, cmdline, listen, upstream) => {
      const config = run(argv, cmdline);
      expect(config.listenText).toBe(listen);
      expect(config.upstream?.text).toBe(upstream);
    });

    it("without an upstream netagent.listen= still wins over agent.server_addr=", () => {
      const config = run([], "agent.server_addr=unix:///k netagent.listen=unix:///n");
      expect(config.listenText).toBe("unix:///n");
      expect(config.upstream).toBeUndefined();
    });

    it("without an upstream nothing changes: agent.server_addr= is the address", () => {
      expect(run([], kata)).toEqual({
        listen: { kind: "vsock", cid: VMADDR_CID_ANY, port: 1025 },
        listenText: "vsock://-1:1025",
        logLevel: "info",
        maxConnections: 64,
        shutdownGraceMs: 5000,
        ipSession: true,
        stateDir: "/run/netagent",
        policy: {},
      });
    });

    it.each([
      [["--upstream", "serial://x"], /--upstream: invalid upstream "serial:\/\/x"/],
      [["--upstream", "hvsock:///a:1"], /expected unix:\/\/\/path or vsock:\/\/CID:PORT/],
      [["--upstream", "vsock://-1:1025"], /CID -1 \(any\) cannot be dialled/],
      [["--upstream", "tcp://1.2.3.4:5"], /--upstream: invalid address "tcp:/],
      [["--upstream", "vsock://1:1024"], /vsock:\/\/1:1024 is the address netagent listens on/],
      [
        ["--listen", "unix:///a", "--upstream", "unix:///a"],
        /unix:\/\/\/a is the address netagent listens on/,
      ],
      [["--upstream"], /--upstream needs a value/],
    ])("refuses %j", (argv, why) => {
      expect(() => parseArgs(argv)).toThrow(ConfigError);
      expect(() => parseArgs(argv)).toThrow(why);
    });
  });
});

describe("parseArgs: log level, connections, help, refusals", () => {
  it.each([
    [["--log-level", "debug"], "", "debug"],
    [["--log-level=error"], "agent.log=debug", "error"],
    [[], "agent.log=warn", "warn"],
  ])("takes the log level from %j %j", (argv, cmdline, level) => {
    expect(run(argv, cmdline).logLevel).toBe(level);
  });

  it.each([
    [["--max-connections", "1"], 1],
    [["--max-connections=999999"], 999_999],
  ])("takes --max-connections from %j", (argv, n) => {
    expect(run(argv).maxConnections).toBe(n);
  });

  it.each([
    [["--help"], "help"],
    [["-h"], "help"],
    [["--listen", "bogus", "--help"], "help"],
    [["--version"], "version"],
  ])("%j asks for %s", (argv, kind) => {
    expect(parseArgs(argv).kind).toBe(kind);
  });

  it.each([
    [["--listen"], "", /--listen needs a value/],
    [["--listen", "tcp://1.2.3.4:5"], "", /--listen: invalid address "tcp:\/\/1\.2\.3\.4:5"/],
    [["--listen", "vsock://x:1"], "", /--listen: invalid address "vsock:\/\/x:1"/],
    [[], "agent.server_addr=nonsense", /--listen: invalid address "nonsense"/],
    [["--listen", "hvsock:///a:1"], "", /host-side address/],
    [
      ["--log-level", "loud"],
      "",
      /--log-level: invalid value "loud" \(expected debug, info, warn, error\)/,
    ],
    [[], "agent.log=trace", /--log-level: invalid value "trace"/],
    [["--max-connections", "0"], "", /--max-connections: invalid value "0": expected at least 1/],
    [["--max-connections", "-3"], "", /--max-connections: invalid value "-3"/],
    [["--max-connections", "ten"], "", /--max-connections: invalid value "ten"/],
    [["--frobnicate"], "", /unknown argument "--frobnicate"/],
    [["extra"], "", /unknown argument "extra"/],
    [["--ip-bin", "ip"], "", /--ip-bin: invalid value "ip" \(expected an absolute path\)/],
  ])("refuses %j %j with a ConfigError naming the value", (argv, cmdline, why) => {
    expect(() => parseArgs(argv, cmdline)).toThrow(ConfigError);
    expect(() => parseArgs(argv, cmdline)).toThrow(why);
  });
});

describe("the usage text", () => {
  it("prints the defaults the agent runs with (from limits.ts, not a second copy)", () => {
    const parsed = parseArgs([], "");
    if (parsed.kind !== "run") throw new Error("expected a run config");
    expect(USAGE).toContain(`connections served at once (default ${parsed.config.maxConnections})`);
    expect(parsed.config.maxConnections).toBe(limits.DEFAULT_MAX_CONNECTIONS);
    expect(parsed.config.shutdownGraceMs).toBe(limits.SHUTDOWN_GRACE_MS);
    expect(USAGE).toContain(`unread this long (default ${limits.DEFAULT_STALL_TIMEOUT_MS})`);
    expect(USAGE).toContain(`make room for a new one (default ${limits.DEFAULT_IDLE_TIMEOUT_MS})`);
  });
});

describe("--policy and netagent.policy=", () => {
  const run = (argv: string[], cmdline = "") => {
    const r = parseArgs(argv, cmdline);
    if (r.kind !== "run") throw new Error("not run");
    return r.config.policy;
  };
  it("takes the flag and the kernel command line's parameter, each an absolute path", () => {
    expect(run(["--policy", "/etc/p.json"])).toEqual({ flag: "/etc/p.json" });
    expect(run([], "quiet netagent.policy=/etc/q.json")).toEqual({ cmdline: "/etc/q.json" });
    expect(() => run(["--policy", "p.json"])).toThrow(/--policy: invalid value "p.json"/);
    expect(() => run([], "netagent.policy=q.json")).toThrow(/netagent.policy=: invalid value/);
  });
});
