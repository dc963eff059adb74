/**
 * The Go interop programs (test/interop/go), built with Debian's golang-go
 * against containerd's ttrpc from /usr/share/gocode in GOPATH mode. Built
 * once, and again only when a source is newer than its binary; a build goes
 * to a temporary name and is renamed, so parallel test files cannot see a
 * half-written binary.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, renameSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Child, run, start, waitForSocket } from "./process";

export const GO_DIR = fileURLToPath(new URL("../interop/go", import.meta.url));
const BIN_DIR = join(GO_DIR, "bin");
const GOPATH = "/usr/share/gocode";
const PROGRAMS = ["ttrpc-client", "ttrpc-server", "ttrpc-upstream"] as const;
type Program = (typeof PROGRAMS)[number];

function goEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GO111MODULE: "off", GOPATH, GOFLAGS: "" };
  if (!env.HOME && !env.GOCACHE) env.GOCACHE = "/tmp/netagent-gocache";
  return env;
}

function newestSource(dirs: string[]): number {
  let newest = 0;
  for (const dir of dirs) {
    for (const name of readdirSync(dir)) {
      if (name.endsWith(".go")) newest = Math.max(newest, statSync(join(dir, name)).mtimeMs);
    }
  }
  return newest;
}

function build(program: Program, { isStatic = false } = {}): string {
  const out = join(BIN_DIR, isStatic ? `${program}-static` : program);
  const sources = newestSource([join(GO_DIR, program), join(GO_DIR, "rawmsg")]);
  if (existsSync(out) && statSync(out).mtimeMs >= sources) return out;
  const which = spawnSync("go", ["version"], { env: goEnv(), encoding: "utf8" });
  if (which.error || which.status !== 0) {
    throw new Error(
      "interop tests need Go: install the Debian packages golang-go and " +
        "golang-github-containerd-ttrpc-dev (test/run.sh does this)",
    );
  }
  if (!existsSync(join(GOPATH, "src/github.com/containerd/ttrpc"))) {
    throw new Error(
      `containerd ttrpc not found under ${GOPATH}: install golang-github-containerd-ttrpc-dev`,
    );
  }
  mkdirSync(BIN_DIR, { recursive: true });
  const tmp = `${out}.tmp-${process.pid}`;
  const r = spawnSync("go", ["build", "-o", tmp, `./${program}`], {
    cwd: GO_DIR,
    // Static (no cgo): for the guest image, which has only the agent's libraries.
    env: isStatic ? { ...goEnv(), CGO_ENABLED: "0" } : goEnv(),
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`go build ${program} failed:\n${r.stderr}`);
  renameSync(tmp, out);
  return out;
}

let built: Record<Program, string> | undefined;

/** Paths of the built Go programs, building them first if needed. */
export function goPrograms(): Record<Program, string> {
  built ??= {
    "ttrpc-client": build("ttrpc-client"),
    "ttrpc-server": build("ttrpc-server"),
    "ttrpc-upstream": build("ttrpc-upstream"),
  };
  return built;
}

/** The stand-in upstream linked statically, for the guest image in front mode. */
export function goStaticUpstream(): string {
  return build("ttrpc-upstream", { isStatic: true });
}

/** One step of a Go client run: `n` calls at concurrency `c` on one connection. */
export interface GoStep {
  service?: string;
  method?: string;
  /** Request payload as hex. */
  payload?: string;
  /** Send this many zero bytes as the payload instead. */
  payloadLen?: number;
  n?: number;
  c?: number;
  timeoutMs?: number;
  /** Metadata pairs, sent in this order (a key may repeat). */
  metadata?: [string, string][];
  /** Steps run at once on the connection; their results come back as `parts`. */
  parallel?: GoStep[];
  /** Close the connection this long after the calls started. */
  closeAfterMs?: number;
  /** Send `patternLen` bytes, byte i = (i*31 + patternSeed) mod 251 (helpers/upstream.ts pattern). */
  patternLen?: number;
  patternSeed?: number;
  /** Report each answer's length and SHA-256 instead of its bytes. */
  hashOnly?: boolean;
  /** Report the google.rpc.Status of a failed call as received (`status`, hex). */
  withStatus?: boolean;
  /** Hold the step until this file exists. */
  waitFor?: string;
  /** Create this file once the step is done. */
  touch?: string;
}

export interface GoCallResult {
  code: number;
  message: string;
  /** Response payload as hex. */
  payload: string;
  error?: string;
  /** The google.rpc.Status received (details included), hex, for a non-OK call. */
  status?: string;
  /** With hashOnly. */
  payloadLen?: number;
  payloadSha256?: string;
}

export interface GoStepResult {
  results?: GoCallResult[];
  codes: Record<string, number>;
  elapsedMs: number;
  callsPerSec: number;
  parts?: GoStepResult[];
}

/**
 * Runs the Go ttrpc client against the unix socket `socket`: the steps in
 * order on one connection. With `summary`, per-call results are left out.
 */
export async function goClient(
  socket: string,
  steps: GoStep[],
  { summary = false, timeoutMs = 60_000 } = {},
): Promise<GoStepResult[]> {
  const withDefaults = (s: GoStep): GoStep => ({
    service: "grpc.Health",
    method: "Check",
    ...s,
    ...(s.parallel ? { parallel: s.parallel.map(withDefaults) } : {}),
  });
  const plan = steps.map(withDefaults);
  const args = ["-socket", socket, "-plan", JSON.stringify(plan)];
  if (summary) args.push("-summary");
  const r = await run(goPrograms()["ttrpc-client"], args, timeoutMs);
  if (r.code !== 0) throw new Error(`ttrpc-client exited ${r.code}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { steps: GoStepResult[] }).steps;
}

/** Starts the Go ttrpc server (grpc.Health) on `socket` and waits until it accepts. */
export async function startGoServer(socket: string): Promise<Child> {
  const child = start(goPrograms()["ttrpc-server"], ["-socket", socket]);
  await waitForSocket(child, socket);
  return child;
}
