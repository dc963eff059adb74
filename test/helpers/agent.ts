/**
 * The compiled agent (dist/netagent, from `npm run build`) started on a
 * unix socket in a temporary directory, or on a fixed socket path a test
 * restarts it at.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { type Child, start, waitForSocket } from "./process";
import { type TempDir, tempDir } from "./tmp";
import { waitFor } from "./wait";

/** dist/netagent, or the binary named by $NETAGENT_BIN (e.g. a build of another checkout). */
export const NETAGENT =
  process.env.NETAGENT_BIN ?? fileURLToPath(new URL("../../dist/netagent", import.meta.url));

/** Fails with a clear message when the agent has not been built. */
export function requireAgentBinary(): string {
  if (!existsSync(NETAGENT)) {
    throw new Error(`${NETAGENT} is missing: run \`npm run build\` first`);
  }
  return NETAGENT;
}

// grpc.Health/Check on stream 1 with an empty CheckRequest, hand-encoded.
const CHECK_FRAME = Uint8Array.of(
  0,
  0,
  0,
  20,
  0,
  0,
  0,
  1,
  1,
  0,
  0x0a,
  11,
  ...new TextEncoder().encode("grpc.Health"),
  0x12,
  5,
  ...new TextEncoder().encode("Check"),
);

/** One Check on a fresh connection; true when a Response for stream 1 comes back. */
export function answersCheck(path: string, timeoutMs = 2_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    let got = Buffer.alloc(0);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on("error", () => done(false));
    socket.on("close", () => done(false));
    socket.on("connect", () => socket.write(CHECK_FRAME));
    socket.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length >= 10) done(got[8] === 2 && got.readUInt32BE(4) === 1);
    });
  });
}

export interface RunningAgent {
  child: Child;
  socket: string;
  dir: TempDir;
  /** SIGTERM by PID, wait for exit, remove the directory. */
  stop(): Promise<void>;
}

export interface StartAgentOptions {
  args?: readonly string[];
  /** Added to the environment. */
  env?: Record<string, string>;
  /** A stand-in `ip` (passed as --ip-bin; the agent reads no variable for it). */
  ipBin?: string;
  /** Run inside this namespace (`ip netns exec` execs the agent: the PID is the agent's). */
  netns?: { name: string };
  /** Another agent build than dist/netagent (benches comparing two). */
  binary?: string;
  /**
   * Ready when the socket accepts rather than when it answers Check: for a
   * front whose upstream (which answers Check) is not there or never answers.
   */
  readyOnSocket?: boolean;
  /**
   * The agent's --state-dir (its change journal). Default: `state` in the
   * agent's temporary directory, so no test shares the machine's
   * /run/netagent; false passes none (the agent's default). Builds that
   * predate the flag get none.
   */
  stateDir?: string | false;
  /** How long to wait for the socket and the first answer (default 10 s each). */
  readyTimeoutMs?: number;
  /** Words run before the agent's binary, which exec it (e.g. `setsid`). */
  launcher?: readonly string[];
}

const knowsStateDir = new Map<string, boolean>();

/** Whether `binary` takes --state-dir (older builds, compared in benches, do not). */
export function takesStateDir(binary: string): boolean {
  let known = knowsStateDir.get(binary);
  if (known === undefined) {
    const r = spawnSync(binary, ["--help"], { encoding: "utf8", timeout: 30_000 });
    known = (r.stdout ?? "").includes("--state-dir");
    knowsStateDir.set(binary, known);
  }
  return known;
}

/**
 * Starts dist/netagent on a fresh unix socket and waits until it answers
 * Check. `extraArgs` may be a list of flags or the full options.
 */
export async function startAgent(
  options: readonly string[] | StartAgentOptions = {},
): Promise<RunningAgent> {
  const opts: StartAgentOptions = Array.isArray(options)
    ? { args: options as readonly string[] }
    : (options as StartAgentOptions);
  const dir = tempDir();
  const socket = dir.join("agent.sock");
  const binary = opts.binary ?? requireAgentBinary();
  const stateDir =
    opts.stateDir === false || !takesStateDir(binary)
      ? undefined
      : (opts.stateDir ?? dir.join("state"));
  const argv = [
    ...(opts.launcher ?? []),
    binary,
    "--listen",
    `unix://${socket}`,
    ...(opts.ipBin ? ["--ip-bin", opts.ipBin] : []),
    ...(stateDir === undefined ? [] : ["--state-dir", stateDir]),
    ...(opts.args ?? []),
  ];
  const [file, ...args] = opts.netns ? ["ip", "netns", "exec", opts.netns.name, ...argv] : argv;
  const child = start(file as string, args, opts.env ? { ...process.env, ...opts.env } : undefined);
  try {
    // Ready means answering Check, not just accepting: the kernel accepts on
    // a listening socket before the agent's JS has gone on to install its
    // signal handlers (and Bun activates those a loop turn later).
    await waitForSocket(child, socket, opts.readyTimeoutMs);
    if (!opts.readyOnSocket) {
      await waitFor(async () => !child.running || (await answersCheck(socket)), {
        what: `${socket} to answer Check`,
        ...(opts.readyTimeoutMs === undefined ? {} : { timeoutMs: opts.readyTimeoutMs }),
      });
    }
    if (!child.running) throw new Error(`netagent exited early: ${child.stderr}`);
  } catch (err) {
    await child.kill();
    dir.remove();
    throw err;
  }
  return {
    child,
    socket,
    dir,
    async stop() {
      try {
        await child.stop("SIGTERM");
      } finally {
        await child.kill();
        dir.remove();
      }
    },
  };
}

/** How agentAt starts the agent, besides its socket. */
export interface AgentAtOptions {
  /** --log-level (default info; debug logs every call, for tests that count them). */
  logLevel?: "debug" | "info";
  /** More flags (e.g. --policy FILE). */
  args?: readonly string[];
}

/**
 * dist/netagent in `ns` on the fixed socket path `socket`, so a test can
 * stop it and start another where its callers look. Its state directory is
 * `SOCKET.state`, beside the socket: kept across such restarts as a
 * guest's /run is, and no test shares the machine's /run/netagent.
 * Back once it answers Check; throws if it exits first.
 */
export async function agentAt(
  ns: { name: string },
  socket: string,
  options: AgentAtOptions = {},
): Promise<Child> {
  const binary = requireAgentBinary();
  const child = start("ip", [
    ...["netns", "exec", ns.name, binary, "--listen", `unix://${socket}`],
    ...["--log-level", options.logLevel ?? "info"],
    ...(takesStateDir(binary) ? ["--state-dir", `${socket}.state`] : []),
    ...(options.args ?? []),
  ]);
  await waitForSocket(child, socket);
  await waitFor(async () => !child.running || (await answersCheck(socket)), {
    what: `${socket} answering`,
  });
  if (!child.running) throw new Error(`netagent exited: ${child.stderr}`);
  return child;
}
