/**
 * Agent configuration from flags and the kernel command line
 * (`netagent.listen=`, `netagent.upstream=`, `agent.server_addr=`,
 * `agent.log=`); flags win. In front mode (an upstream is set) the agent
 * never takes its address from `agent.server_addr=`: that parameter is the
 * agent's behind it. Pure: the caller passes argv and the text of /proc/cmdline.
 */
import * as v from "valibot";
import {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_STALL_TIMEOUT_MS,
  DEFAULT_STATE_DIR,
  SHUTDOWN_GRACE_MS,
} from "../../common/limits";
import { LEVELS, type Level } from "../../common/log";
import {
  parseUpstream,
  type UpstreamAddress,
  upstreamIsListen,
} from "../../front/upstream-address";
import { type AgentAddress, DEFAULT_ADDRESS, parseAddress } from "../../transport/address";
import { parseCidList } from "../server/vsock-peers";
import { lastCmdlineParam, parseKernelCmdline } from "./kernel-cmdline";

export interface AgentConfig {
  listen: AgentAddress;
  listenText: string;
  /** Front mode: where every call the agent does not serve itself goes. */
  upstream?: UpstreamAddress;
  logLevel: Level;
  /** Most connections served at once; more are closed on accept. */
  maxConnections: number;
  /** Milliseconds in-flight calls get to finish on SIGTERM. */
  shutdownGraceMs: number;
  /** A stand-in for iproute2's `ip` (tests only; init never passes it); unset = `ip` from PATH. */
  ipBin?: string;
  /** Keep one resident ip for small changes and reads (ip-session.ts); off: a process per run. */
  ipSession: boolean;
  /** vsock peers served (by CID); unset = any, as Kata's agent. */
  vsockAllowCids?: ReadonlySet<number>;
  /** Milliseconds a peer may stall (half a frame, answers unread); unset = the server's default. */
  stallTimeoutMs?: number;
  /** Milliseconds idle after which a connection gives way to a new one at the cap. */
  idleTimeoutMs?: number;
  /** Where the change journal lives (journal.ts): a directory of root's alone. */
  stateDir: string;
  /** The network policy's file: `--policy` and `netagent.policy=` (policy/load.ts). */
  policy: { flag?: string; cmdline?: string };
}

export type ParsedArgs =
  | { kind: "run"; config: AgentConfig }
  | { kind: "help" }
  | { kind: "version" };

/** Thrown for a bad flag or value; main prints it and exits 2. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export const USAGE = `usage: netagent [--listen ADDR] [--upstream ADDR] [--log-level LEVEL] [--max-connections N]
                [--stall-timeout-ms MS] [--idle-timeout-ms MS]
                [--vsock-allow-cid CID[,CID...]]
                [--ip-bin PATH] [--ip-session on|off] [--state-dir DIR] [--policy FILE]

Guest network agent: serves grpc.AgentService and grpc.Health over ttRPC.

  --listen ADDR         vsock://CID:PORT (default ${DEFAULT_ADDRESS}, CID -1 = any),
                        unix:///path, serial:///dev/vportNpM or serial://NAME
  --upstream ADDR       front mode: serve the network methods and netagent.v1,
                        forward every other call to the agent at ADDR
                        (unix:///path or vsock://CID:PORT)
  --log-level LEVEL     ${LEVELS.join(", ")} (default info)
  --max-connections N   connections served at once (default ${DEFAULT_MAX_CONNECTIONS})
  --stall-timeout-ms MS close a peer that leaves a frame half-sent or its answers
                        unread this long (default ${DEFAULT_STALL_TIMEOUT_MS})
  --idle-timeout-ms MS  at the connection cap, a connection idle this long is
                        closed to make room for a new one (default ${DEFAULT_IDLE_TIMEOUT_MS})
  --vsock-allow-cid CIDS
                        serve only vsock peers with these CIDs (repeatable or
                        comma list; e.g. 2, the host); default any, as Kata
  --ip-bin PATH         run this executable instead of iproute2's ip (tests; no
                        environment variable does this)
  --ip-session on|off   keep one resident \`ip -batch\` for small changes and
                        reads (default on); off starts a process for each
  --state-dir DIR       where a change under way is recorded, to be undone by
                        the next agent should this one die (default
                        ${DEFAULT_STATE_DIR}; made 0700, refused if others may read it)
  --policy FILE         the guest's network policy (JSON, docs/policy.md); else
                        netagent.policy=FILE, else init data's netagent-policy,
                        else /etc/netagent/policy.json; none: no policy
  --version, --help

The kernel command line may set netagent.listen=ADDR, netagent.upstream=ADDR,
netagent.policy=FILE, agent.server_addr=ADDR (not read in front mode: it is
the upstream agent's) and agent.log=LEVEL; flags win over it.
`;

const LevelSchema = v.picklist(LEVELS);
const CountSchema = v.pipe(
  v.string(),
  v.regex(/^\d{1,6}$/, "expected a whole number"),
  v.transform(Number),
  v.minValue(1, "expected at least 1"),
);

/** Milliseconds up to about 11.5 days (0 allowed: every idle connection may give way). */
const MillisSchema = v.pipe(
  v.string(),
  v.regex(/^\d{1,9}$/, "expected a whole number of milliseconds"),
  v.transform(Number),
);

interface Raw {
  /** `--listen`, or `agent.server_addr=` (not read in front mode). */
  listen?: string;
  /** `netagent.listen=`: wins over `agent.server_addr=`, not over `--listen`. */
  netagentListen?: string;
  upstream?: string;
  logLevel?: string;
  maxConnections?: string;
  stallTimeoutMs?: string;
  idleTimeoutMs?: string;
  ipBin?: string;
  ipSession?: string;
  stateDir?: string;
  policy?: string;
}

/** Flags that may be given more than once (their values are collected). */
interface Lists {
  vsockAllowCid: string[];
}

/**
 * Reads `netagent.*` and `agent.*` options out of a kernel command line,
 * split by the kernel's own rules (kernel-cmdline.ts): a quoted
 * `x="a agent.log=debug"` is one parameter x, and the last occurrence of a
 * parameter wins.
 */
export function parseCmdline(cmdline: string): Raw {
  const params = parseKernelCmdline(cmdline);
  const raw: Raw = {};
  const value = (name: string) => lastCmdlineParam(params, name)?.value;
  const listen = value("agent.server_addr");
  const netagentListen = value("netagent.listen");
  const upstream = value("netagent.upstream");
  const logLevel = value("agent.log");
  const policy = value("netagent.policy");
  if (policy !== undefined) raw.policy = policy;
  if (listen !== undefined) raw.listen = listen;
  if (netagentListen !== undefined) raw.netagentListen = netagentListen;
  if (upstream !== undefined) raw.upstream = upstream;
  if (logLevel !== undefined) raw.logLevel = logLevel;
  return raw;
}

/** The flags as given, by key; --help and --version end the reading. */
function readFlags(
  argv: readonly string[],
): { kind: "help" } | { kind: "version" } | { fromFlags: Raw; lists: Lists } {
  const fromFlags: Raw = {};
  const lists: Lists = { vsockAllowCid: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--help" || arg === "-h") return { kind: "help" };
    if (arg === "--version") return { kind: "version" };
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const key = (
      {
        "--listen": "listen",
        "--upstream": "upstream",
        "--log-level": "logLevel",
        "--max-connections": "maxConnections",
        "--stall-timeout-ms": "stallTimeoutMs",
        "--idle-timeout-ms": "idleTimeoutMs",
        "--ip-bin": "ipBin",
        "--ip-session": "ipSession",
        "--state-dir": "stateDir",
        "--policy": "policy",
      } as const
    )[name];
    const list = ({ "--vsock-allow-cid": "vsockAllowCid" } as const)[name];
    if (key === undefined && list === undefined) {
      throw new ConfigError(`unknown argument ${JSON.stringify(arg)}`);
    }
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new ConfigError(`${name} needs a value`);
    if (list !== undefined) lists[list].push(value);
    else if (key !== undefined) fromFlags[key] = value;
  }
  return { fromFlags, lists };
}

/** Where to listen and the upstream, flags over the command line, checked together. */
function addresses(
  raw: Raw,
  fromFlags: Raw,
): { upstream: UpstreamAddress | undefined; listen: AgentAddress; listenText: string } {
  let upstream: UpstreamAddress | undefined;
  if (raw.upstream !== undefined) {
    try {
      upstream = parseUpstream(raw.upstream);
    } catch (err) {
      throw new ConfigError(`--upstream: ${(err as Error).message}`);
    }
  }
  const listenText =
    fromFlags.listen ??
    raw.netagentListen ??
    (upstream === undefined ? raw.listen : undefined) ??
    DEFAULT_ADDRESS;
  let listen: AgentAddress;
  try {
    listen = parseAddress(listenText);
  } catch (err) {
    throw new ConfigError(`--listen: ${(err as Error).message}`);
  }
  if (listen.kind === "hvsock") {
    throw new ConfigError(`--listen: hvsock:// is a host-side address, not one to listen on`);
  }
  if (upstream !== undefined && upstreamIsListen(upstream, listen)) {
    throw new ConfigError(
      `--upstream: ${upstream.text} is the address netagent listens on (it would call itself)`,
    );
  }
  return { upstream, listen, listenText };
}

/** The values that must be absolute paths or one of a few words. */
function checkPaths(fromFlags: Raw, cmdline: string): void {
  if (fromFlags.ipBin !== undefined && !fromFlags.ipBin.startsWith("/")) {
    throw new ConfigError(
      `--ip-bin: invalid value ${JSON.stringify(fromFlags.ipBin)} (expected an absolute path)`,
    );
  }
  if (fromFlags.ipSession !== undefined && !["on", "off"].includes(fromFlags.ipSession)) {
    throw new ConfigError(
      `--ip-session: invalid value ${JSON.stringify(fromFlags.ipSession)} (expected on or off)`,
    );
  }
  if (fromFlags.stateDir !== undefined && !fromFlags.stateDir.startsWith("/")) {
    throw new ConfigError(
      `--state-dir: invalid value ${JSON.stringify(fromFlags.stateDir)} (expected an absolute path)`,
    );
  }
  const cmdlinePolicy = parseCmdline(cmdline).policy;
  for (const [what, path] of [
    ["--policy", fromFlags.policy],
    ["netagent.policy=", cmdlinePolicy],
  ] as const) {
    if (path !== undefined && !path.startsWith("/")) {
      throw new ConfigError(
        `${what}: invalid value ${JSON.stringify(path)} (expected an absolute path)`,
      );
    }
  }
}

/** Resolves flags over the command line; throws ConfigError naming the bad value. */
export function parseArgs(argv: readonly string[], cmdline = ""): ParsedArgs {
  const flags = readFlags(argv);
  if ("kind" in flags) return flags;
  const { fromFlags, lists } = flags;
  const raw = { ...parseCmdline(cmdline), ...fromFlags };

  const { upstream, listen, listenText } = addresses(raw, fromFlags);
  const level = v.safeParse(LevelSchema, raw.logLevel ?? "info");
  if (!level.success) {
    throw new ConfigError(
      `--log-level: invalid value ${JSON.stringify(raw.logLevel)} (expected ${LEVELS.join(", ")})`,
    );
  }
  const max = v.safeParse(CountSchema, raw.maxConnections ?? String(DEFAULT_MAX_CONNECTIONS));
  if (!max.success) {
    throw new ConfigError(
      `--max-connections: invalid value ${JSON.stringify(raw.maxConnections)}: ${max.issues[0].message}`,
    );
  }
  let stallTimeoutMs: number | undefined;
  if (raw.stallTimeoutMs !== undefined) {
    const stall = v.safeParse(CountSchema, raw.stallTimeoutMs);
    if (!stall.success) {
      throw new ConfigError(
        `--stall-timeout-ms: invalid value ${JSON.stringify(raw.stallTimeoutMs)}: ${stall.issues[0].message}`,
      );
    }
    stallTimeoutMs = stall.output;
  }
  let idleTimeoutMs: number | undefined;
  if (raw.idleTimeoutMs !== undefined) {
    const idle = v.safeParse(MillisSchema, raw.idleTimeoutMs);
    if (!idle.success) {
      throw new ConfigError(
        `--idle-timeout-ms: invalid value ${JSON.stringify(raw.idleTimeoutMs)}: ${idle.issues[0].message}`,
      );
    }
    idleTimeoutMs = idle.output;
  }
  checkPaths(fromFlags, cmdline);
  const cmdlinePolicy = parseCmdline(cmdline).policy;
  let vsockAllowCids: Set<number> | undefined;
  if (lists.vsockAllowCid.length > 0) {
    if (listen.kind !== "vsock") {
      throw new ConfigError(`--vsock-allow-cid: only for a vsock:// address, not ${listenText}`);
    }
    try {
      vsockAllowCids = parseCidList(lists.vsockAllowCid);
    } catch (err) {
      throw new ConfigError(`--vsock-allow-cid: ${(err as Error).message}`);
    }
  }
  return {
    kind: "run",
    config: {
      listen,
      listenText,
      ...(upstream === undefined ? {} : { upstream }),
      logLevel: level.output,
      maxConnections: max.output,
      shutdownGraceMs: SHUTDOWN_GRACE_MS,
      ipSession: fromFlags.ipSession !== "off",
      stateDir: fromFlags.stateDir ?? DEFAULT_STATE_DIR,
      policy: {
        ...(fromFlags.policy === undefined ? {} : { flag: fromFlags.policy }),
        ...(cmdlinePolicy === undefined ? {} : { cmdline: cmdlinePolicy }),
      },
      ...(stallTimeoutMs === undefined ? {} : { stallTimeoutMs }),
      ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
      ...(fromFlags.ipBin === undefined ? {} : { ipBin: fromFlags.ipBin }),
      ...(vsockAllowCids === undefined ? {} : { vsockAllowCids }),
    },
  };
}
