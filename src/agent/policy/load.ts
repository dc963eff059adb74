/**
 * Finds and reads the guest's network policy once, at start, from the first
 * of: `--policy FILE`; `netagent.policy=FILE` on the kernel command line;
 * the `netagent-policy` entry of Kata's init data (initdata.ts); the image's
 * {@link DEFAULT_POLICY_PATH}. A source that is named but cannot be read,
 * or a policy that does not parse, is a PolicyError (the agent exits 2):
 * never "allow all". None of them: undefined, the agent without a policy.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { type InitdataPlaces, initdataPolicy } from "./initdata";
import { type Policy, PolicyError, parsePolicy } from "./schema";

const DEFAULT_POLICY_PATH = "/etc/netagent/policy.json";
/** A policy file larger than this is refused. */
const MAX_POLICY_BYTES = 4 << 20;

export interface PolicySources {
  /** `--policy`. */
  flag?: string;
  /** `netagent.policy=`. */
  cmdline?: string;
  initdata?: InitdataPlaces;
  defaultPath?: string;
}

export interface LoadedPolicy {
  policy: Policy;
  /** Where it came from, for the log. */
  source: string;
}

function readPolicyFile(path: string, what: string): string {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new PolicyError(`policy ${what} ${path}: not a regular file`);
    size = st.size;
  } catch (err) {
    if (err instanceof PolicyError) throw err;
    throw new PolicyError(`policy ${what} ${path}: ${(err as Error).message}`);
  }
  if (size > MAX_POLICY_BYTES) {
    throw new PolicyError(`policy ${what} ${path}: ${size} bytes, more than ${MAX_POLICY_BYTES}`);
  }
  return readFileSync(path, "utf8");
}

/** The policy in force, or undefined when the guest has none; throws PolicyError. */
export async function loadPolicy(sources: PolicySources): Promise<LoadedPolicy | undefined> {
  const named = sources.flag ?? sources.cmdline;
  if (named !== undefined) {
    const what = sources.flag !== undefined ? "--policy" : "netagent.policy=";
    const source = `${what} ${named}`;
    return { policy: parsePolicy(readPolicyFile(named, what), source), source };
  }
  let entry: string | undefined;
  try {
    entry = await initdataPolicy(sources.initdata);
  } catch (err) {
    throw new PolicyError(`policy: ${(err as Error).message}`);
  }
  if (entry !== undefined) {
    if (entry.length > MAX_POLICY_BYTES) throw new PolicyError("policy init data: too large");
    const source = "init data netagent-policy";
    return { policy: parsePolicy(entry, source), source };
  }
  const path = sources.defaultPath ?? DEFAULT_POLICY_PATH;
  if (!existsSync(path)) return undefined;
  const source = path;
  return { policy: parsePolicy(readPolicyFile(path, "file"), source), source };
}
