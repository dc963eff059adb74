/**
 * Asks the same route lookups in the pod and in the guest and compares the
 * answers: type, device (by name), gateway, table, source asked and
 * preferred source; an error is compared as its message. Both netns get the
 * same multipath hash seed first (it is random per netns otherwise, and then
 * the hop a lookup picks of a multipath route differs for no fault of the
 * mirror); this is done after the complete comparison, so it is never part
 * of what is compared.
 */
import { existsSync } from "node:fs";
import { run } from "../helpers/process";
import { isKernelLinkLocal } from "./ignore";
import type { Probe } from "./probes";

export interface LookupResult {
  probe: Probe;
  pod: string;
  guest: string;
  agree: boolean;
}

const HASH_SEED = "net.ipv4.fib_multipath_hash_seed";

/** Sets the multipath hash seed in both netns where this kernel has it (Linux 6.11+). */
export async function sameHashSeed(pod: string, guest: string): Promise<void> {
  if (!existsSync(`/proc/sys/${HASH_SEED.replaceAll(".", "/")}`)) return;
  for (const ns of [pod, guest]) {
    const r = await run("ip", ["netns", "exec", ns, "sysctl", "-qw", `${HASH_SEED}=20220`]);
    if (r.code !== 0) throw new Error(`${HASH_SEED} in ${ns}: ${r.stderr.trim()}`);
  }
}

export async function lookup(ns: string, probe: Probe): Promise<string> {
  const r = await run("ip", ["-n", ns, "-d", "-j", ...probe.args]);
  if (r.code !== 0) return `error: ${r.stderr.trim()}`;
  let answer: Record<string, unknown> | undefined;
  try {
    [answer] = JSON.parse(r.stdout || "[]") as Record<string, unknown>[];
  } catch (err) {
    throw new Error(
      `ip -n ${ns} ${probe.args.join(" ")}: ${(err as Error).message}: ${r.stdout.slice(0, 300)}`,
    );
  }
  if (!answer) return "error: empty answer";
  // IGNORED.lookupKernelLinkLocalSource
  if (typeof answer.prefsrc === "string" && isKernelLinkLocal(answer.prefsrc))
    answer.prefsrc = "(kernel link-local)";
  const keep = ["type", "dev", "gateway", "via", "table", "from", "prefsrc"];
  return keep
    .filter((k) => answer[k] !== undefined)
    .map((k) => `${k} ${typeof answer[k] === "string" ? answer[k] : JSON.stringify(answer[k])}`)
    .join(" ");
}

export async function runLookups(
  pod: string,
  guest: string,
  probes: Probe[],
): Promise<LookupResult[]> {
  await sameHashSeed(pod, guest);
  const out: LookupResult[] = [];
  for (const probe of probes) {
    const a = await lookup(pod, probe);
    const b = await lookup(guest, probe);
    out.push({ probe, pod: a, guest: b, agree: a === b });
  }
  return out;
}
