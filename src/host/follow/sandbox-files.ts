/**
 * What a Kata sandbox directory tells the follower, read with bounds.
 *
 * Kata's Go shim keeps `<root>/<id>/persist.json` (the virtcontainers
 * SandboxState as Go's encoding/json writes it: field names as declared,
 * `Network.NetworkID` the pod's netns path, `AgentState.URL` the agent's
 * address); runtime-rs keeps `<root>/<id>/state.json` with the netns at
 * `hypervisor.netns`. The Go shim rewrites persist.json in place (truncate,
 * then encode), so a read can meet it empty or half written: such a read is
 * "unparsed", not a verdict; the sandbox decides when to give up.
 *
 * Refused: a file whose real path leaves the root (a symlink out of it), a
 * file larger than {@link FILE_CAP}, anything not a regular file.
 */
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync } from "node:fs";

/** At most this many bytes of persist.json or state.json are read (Kata's are a few KiB). */
const FILE_CAP = 1 << 20;

/** What one read of a state file gave. */
export type FileRead =
  | { kind: "absent" }
  | { kind: "text"; text: string }
  /** Not to be read at all: the reason (symlink out of the root, too large, not a file). */
  | { kind: "refused"; reason: string };

/** True when `path` is `dir` or below it. */
export function isWithin(dir: string, path: string): boolean {
  return path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

/** A path that could not be resolved or opened: absent when it is not there, else refused. */
function failedOpen(path: string, err: unknown): FileRead {
  if ((err as NodeJS.ErrnoException).code === "ENOENT") return { kind: "absent" };
  return { kind: "refused", reason: `${path}: ${(err as Error).message}` };
}

/**
 * Reads `path` if its real location is inside `root` (already real), a
 * regular file, at most `cap` bytes. The final component is opened with
 * O_NOFOLLOW, so a symlink swapped in after the check is not followed.
 */
export function readBounded(root: string, path: string, cap = FILE_CAP): FileRead {
  let real: string;
  try {
    real = realpathSync(path);
  } catch (err) {
    return failedOpen(path, err);
  }
  if (!isWithin(root, real)) {
    return { kind: "refused", reason: `${path} leads out of ${root} (to ${real})` };
  }
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    return failedOpen(path, err);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { kind: "refused", reason: `${path} is not a regular file` };
    if (st.size > cap) {
      return { kind: "refused", reason: `${path} is ${st.size} bytes, over the ${cap}-byte cap` };
    }
    const buf = Buffer.alloc(cap + 1);
    let n = 0;
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
      if (n > cap) {
        return { kind: "refused", reason: `${path} grew over the ${cap}-byte cap while read` };
      }
    }
    return { kind: "text", text: buf.toString("utf8", 0, n) };
  } finally {
    closeSync(fd);
  }
}

/** What a state file says of the sandbox: each field when present. */
export interface SandboxFacts {
  netns?: string;
  agentUrl?: string;
}

export type Parsed = { ok: true; facts: SandboxFacts } | { ok: false; why: string };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A string field's value, or undefined when absent or empty; a non-string is an error. */
function stringAt(v: unknown, where: string): string | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw new Error(`${where} is not a string`);
  return v;
}

function parseObject(text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  if (!isObject(value)) throw new Error("not a JSON object");
  return value;
}

/** Pure: the Go shim's persist.json: `Network.NetworkID`, `AgentState.URL`. */
export function parsePersist(text: string): Parsed {
  try {
    const doc = parseObject(text);
    const network = doc.Network;
    const agent = doc.AgentState;
    const facts: SandboxFacts = {};
    if (isObject(network)) {
      const netns = stringAt(network.NetworkID, "Network.NetworkID");
      if (netns !== undefined) facts.netns = netns;
    }
    if (isObject(agent)) {
      const url = stringAt(agent.URL, "AgentState.URL");
      if (url !== undefined) facts.agentUrl = url;
    }
    return { ok: true, facts };
  } catch (err) {
    return { ok: false, why: (err as Error).message };
  }
}

/** Pure: runtime-rs's state.json: `hypervisor.netns`. */
export function parseRuntimeRsState(text: string): Parsed {
  try {
    const doc = parseObject(text);
    const hv = doc.hypervisor;
    const facts: SandboxFacts = {};
    if (isObject(hv)) {
      const netns = stringAt(hv.netns, "hypervisor.netns");
      if (netns !== undefined) facts.netns = netns;
    }
    return { ok: true, facts };
  } catch (err) {
    return { ok: false, why: (err as Error).message };
  }
}
