/**
 * From a sandbox directory to the two ends `follow` joins: the pod's
 * network namespace and the guest agent's address, or why not yet.
 *
 * - The address: the shim's answer on `shim-monitor.sock` (agent-url.ts)
 *   when that socket is there, else `persist.json` `AgentState.URL`.
 * - The netns: `persist.json` `Network.NetworkID` (Go shim) or `state.json`
 *   `hypervisor.netns` (runtime-rs); it must exist and be a network
 *   namespace (`nsenter --net=` accepts only that kind).
 * - Files not there yet, or without those fields yet: "waiting". A state
 *   file that does not parse: "unparsed" (it may be half written; the
 *   caller reads it again at its next write and gives up after a while).
 *   Anything refused (symlink out of the root, over the size cap, an
 *   unknown scheme, a shim that hangs or answers garbage): "failed".
 */
import { closeSync, constants, existsSync, lstatSync, openSync, statSync } from "node:fs";
import { join } from "node:path";
import { libcIoctl } from "../../process/libc-ioctl";
import { runProcess } from "../../process/run-process";
import { AgentUrlError, askAgentUrl, checkAgentUrl } from "./agent-url";
import { netnsName } from "./node-monitor";
import {
  type FileRead,
  type Parsed,
  parsePersist,
  parseRuntimeRsState,
  readBounded,
  type SandboxFacts,
} from "./sandbox-files";

export type Resolution =
  | { kind: "waiting"; why: string }
  | { kind: "unparsed"; why: string }
  | { kind: "failed"; why: string }
  | { kind: "ready"; netns: string; addr: string; addrFrom: string };

const SHIM_SOCKET = "shim-monitor.sock";
const PERSIST_FILE = "persist.json";
const RS_STATE_FILE = "state.json";

/** The facts of one state file, or the resolution that stops here. */
function factsOf(
  name: string,
  read: FileRead,
  parse: (text: string) => Parsed,
): SandboxFacts | Resolution | undefined {
  if (read.kind === "absent") return undefined;
  if (read.kind === "refused") return { kind: "failed", why: read.reason };
  if (read.text.length === 0) return { kind: "unparsed", why: `${name} is empty` };
  const parsed = parse(read.text);
  if (!parsed.ok) return { kind: "unparsed", why: `${name} does not parse: ${parsed.why}` };
  return parsed.facts;
}

const isResolution = (x: unknown): x is Resolution =>
  typeof x === "object" && x !== null && "kind" in x;

/** The namespace to read: a name under /run/netns when it is one (ip -n, no nsenter), else the path. */
export function podNetns(path: string): string {
  return netnsName(path) ?? path;
}

/** NS_GET_NSTYPE (linux/nsfs.h, Linux 4.11): a namespace file's CLONE_NEW* type. */
const NS_GET_NSTYPE = 0xb703;
const CLONE_NEWNET = 0x40000000;

/**
 * Whether `path` is a network namespace. A namespace file stats as a
 * regular file: anything else (a device, a FIFO, a socket) is refused
 * before it is opened, so opening it has no effect of its own and cannot
 * block. The kind is asked of the open file (NS_GET_NSTYPE), with no
 * process; where that ioctl cannot be made, nsenter is asked, as it enters
 * only a network namespace with --net.
 */
export async function netnsProblem(path: string): Promise<Resolution | undefined> {
  if (!existsSync(path)) return { kind: "waiting", why: `netns ${path} is not there (yet)` };
  let why: string | undefined;
  try {
    why = statSync(path).isFile() ? await namespaceProblem(path) : "not a file";
  } catch (err) {
    why = (err as Error).message;
  }
  return why === undefined
    ? undefined
    : { kind: "failed", why: `${path} is not a network namespace (${why})` };
}

/** Why the file at `path` is no network namespace, or undefined when it is one. */
async function namespaceProblem(path: string): Promise<string | undefined> {
  const ioctl = await libcIoctl();
  if (ioctl === undefined) return nsenterProblem(path);
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const [type, errno] = ioctl(fd, NS_GET_NSTYPE);
    if (type === CLONE_NEWNET) return undefined;
    return type < 0 ? `not a namespace file: errno ${errno}` : "another kind of namespace";
  } finally {
    closeSync(fd);
  }
}

async function nsenterProblem(path: string): Promise<string | undefined> {
  const r = await runProcess({
    argv: ["nsenter", `--net=${path}`, "--", "true"],
    timeoutMs: 5000,
    maxOutputBytes: 1024,
    maxStderrBytes: 4096,
  });
  if (r.stop.kind === "exited" && r.stop.code === 0) return undefined;
  return r.stderr.trim().split("\n")[0] || r.stop.kind;
}

/**
 * What the sandbox in `dir` (below `root`, both real paths) resolves to
 * now. `shimUrl` is the shim's answer when the caller has one already
 * (asked again only when it passes undefined).
 */
export async function resolveSandbox(
  root: string,
  dir: string,
  shimUrl?: string,
): Promise<Resolution & { shimUrl?: string }> {
  const go = factsOf(PERSIST_FILE, readBounded(root, join(dir, PERSIST_FILE)), parsePersist);
  if (isResolution(go)) return go;
  const rs = factsOf(
    RS_STATE_FILE,
    readBounded(root, join(dir, RS_STATE_FILE)),
    parseRuntimeRsState,
  );
  if (isResolution(rs)) return rs;
  if (go === undefined && rs === undefined) {
    return { kind: "waiting", why: `no ${PERSIST_FILE} or ${RS_STATE_FILE} yet` };
  }
  const netns = go?.netns ?? rs?.netns;
  if (netns === undefined) {
    return { kind: "waiting", why: "no netns yet (Network.NetworkID, hypervisor.netns)" };
  }
  if (!netns.startsWith("/"))
    return { kind: "failed", why: `netns ${JSON.stringify(netns)} is not an absolute path` };
  let addr: string | undefined;
  let addrFrom = SHIM_SOCKET;
  let url = shimUrl;
  try {
    const sock = join(dir, SHIM_SOCKET);
    if (url === undefined && isSocket(sock)) url = await askAgentUrl(sock);
    if (url !== undefined) addr = url;
    else if (go?.agentUrl !== undefined) {
      addr = checkAgentUrl(go.agentUrl, `${PERSIST_FILE} AgentState.URL`);
      addrFrom = `${PERSIST_FILE} AgentState.URL`;
    }
  } catch (err) {
    if (err instanceof AgentUrlError) return { kind: "failed", why: err.message };
    throw err;
  }
  if (addr === undefined) {
    return { kind: "waiting", why: `no agent address yet (${SHIM_SOCKET}, AgentState.URL)` };
  }
  const problem = await netnsProblem(netns);
  if (problem) return problem;
  return { kind: "ready", netns, addr, addrFrom, ...(url !== undefined ? { shimUrl: url } : {}) };
}

function isSocket(path: string): boolean {
  try {
    return lstatSync(path).isSocket();
  } catch {
    return false;
  }
}
