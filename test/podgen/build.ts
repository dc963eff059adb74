/**
 * Builds a recipe for real: a pod netns (its veths' peers in a peer netns,
 * its taps held open by a process as a VMM holds them, its bridges without
 * ports) configured by running the recipe's own `ip`/`sysctl` commands, and a
 * guest netns with, for every pod NIC that has a MAC, a veth with that MAC
 * (its peer in a guest-peer netns) and dist/netagent serving a unix socket.
 * A command this kernel refuses is left out and recorded (so the pod is what
 * the kernel accepted). Every netns is named uniquely and removed by
 * `remove()`, also when building fails; the machine's own netns is never
 * touched (every `ip` names its netns).
 */
import { randomBytes } from "node:crypto";
import { type RunningAgent, startAgent } from "../helpers/agent";
import { type Child, run, start } from "../helpers/process";
import { waitFor } from "../helpers/wait";
import type { Recipe, Step } from "./recipe";

export interface Dropped {
  step: Step;
  error: string;
}

export interface BuiltPod {
  pod: string;
  peer: string;
  guest?: string;
  guestPeer?: string;
  agent?: RunningAgent;
  /** Commands the kernel refused, in order, with its message. */
  dropped: Dropped[];
  remove(): Promise<void>;
}

export interface BuildOptions {
  /** Also make the guest netns and start the agent there (default true). */
  guest?: boolean;
  /** How long `settle` waits for DAD (default 8 s); a timeout is recorded, not thrown. */
  settleMs?: number;
}

/** `ip ARGS`, throwing with stderr on failure (for the builder's own set-up). */
export async function ipOk(...args: string[]): Promise<string> {
  const r = await run("ip", args);
  if (r.code !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout;
}

export async function buildPod(recipe: Recipe, opts: BuildOptions = {}): Promise<BuiltPod> {
  const tag = `${process.pid % 100000}-${randomBytes(2).toString("hex")}`;
  const made: string[] = [];
  const holders: Child[] = [];
  let agent: RunningAgent | undefined;
  const remove = async () => {
    if (agent) await agent.stop().catch(() => {});
    for (const h of holders) await h.kill().catch(() => {});
    for (const ns of made.reverse()) await run("ip", ["netns", "del", ns]).catch(() => {});
  };
  const netns = async (role: string) => {
    const name = `pg${role}-${recipe.seed}-${tag}`;
    await ipOk("netns", "add", name);
    made.push(name);
    await ipOk("-n", name, "link", "set", "lo", "up");
    return name;
  };
  try {
    const pod = await netns("p");
    const peer = await netns("q");
    const dropped = await configurePod(recipe, pod, peer, opts.settleMs ?? 8_000, holders);
    const built: BuiltPod = { pod, peer, dropped, remove };
    if (opts.guest === false) return built;
    built.guest = await netns("g");
    built.guestPeer = await netns("h");
    await makeGuestNics(recipe, built.guest, built.guestPeer);
    agent = await startAgent({ netns: { name: built.guest } });
    built.agent = agent;
    return built;
  } catch (err) {
    await remove();
    throw err;
  }
}

async function configurePod(
  recipe: Recipe,
  pod: string,
  peer: string,
  settleMs: number,
  holders: Child[],
) {
  for (const [i, nic] of recipe.nics.entries()) {
    if (nic.kind === "tun") {
      await ipOk("-n", pod, "tuntap", "add", "dev", nic.name, "mode", "tun");
      continue;
    }
    if (nic.kind === "bridge") {
      await ipOk(
        "-n",
        pod,
        "link",
        "add",
        nic.name,
        "address",
        nic.mac as string,
        "type",
        "bridge",
      );
      continue;
    }
    if (nic.kind === "tap") {
      await ipOk("-n", pod, "tuntap", "add", "dev", nic.name, "mode", "tap");
      await ipOk("-n", pod, "link", "set", nic.name, "address", nic.mac as string);
      holders.push(await holdTap(pod, nic.name));
      continue;
    }
    const p = `p${i}`;
    await ipOk(
      "-n",
      pod,
      "link",
      "add",
      nic.name,
      "address",
      nic.mac as string,
      "type",
      "veth",
      "peer",
      "name",
      p,
      "netns",
      peer,
    );
    await ipOk("-n", peer, "link", "set", p, "up");
  }
  const dropped: Dropped[] = [];
  for (const step of recipe.steps) {
    const error = await runStep(step, pod, settleMs);
    if (error) dropped.push({ step, error });
  }
  return dropped;
}

/** IFF_TAP | IFF_NO_PI, TUNSETIFF: attach to a tap as a VMM does, then wait to be killed. */
const HOLD_TAP = `
import fcntl, os, signal, struct, sys
fd = os.open("/dev/net/tun", os.O_RDWR)
fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", sys.argv[1].encode(), 0x0002 | 0x1000))
print("attached", flush=True)
signal.pause()
`;

/** A process in `pod` holding the tap open (the tap then has carrier); the caller kills it by PID. */
async function holdTap(pod: string, name: string): Promise<Child> {
  const child = start("ip", ["netns", "exec", pod, "python3", "-c", HOLD_TAP, name]);
  try {
    await waitFor(async () => child.stdout.includes("attached") || !child.running, {
      timeoutMs: 10_000,
      what: `a process attached to ${name}`,
    });
  } catch (err) {
    await child.kill();
    throw err;
  }
  if (!child.running) throw new Error(`could not attach to ${name}: ${child.stderr}`);
  return child;
}

/** Runs one step in `pod`; answers the kernel's (or the tool's) complaint, or undefined. */
export async function runStep(
  step: Step,
  pod: string,
  settleMs = 8_000,
): Promise<string | undefined> {
  if (step.tool === "settle") {
    try {
      await waitFor(async () => (await tentative(pod)).length === 0, {
        timeoutMs: settleMs,
        what: "DAD",
      });
      return undefined;
    } catch {
      return `still tentative after ${settleMs} ms: ${(await tentative(pod)).join(", ")}`;
    }
  }
  const argv =
    step.tool === "ip"
      ? ["-n", pod, ...step.args]
      : ["netns", "exec", pod, "sysctl", "-w", ...step.args];
  const r = await run("ip", argv);
  // sysctl(8) reports some refusals on stderr with status 0.
  const complaint = step.tool === "sysctl" && /^sysctl: /m.test(r.stderr);
  if (r.code === 0 && !complaint) return undefined;
  return r.stderr.trim() || `exit ${r.code}`;
}

/** Tentative IPv6 addresses on links with carrier (a tun without a reader never finishes DAD). */
async function tentative(pod: string): Promise<string[]> {
  const out = await ipOk("-n", pod, "-j", "-6", "address", "show", "tentative");
  const links = JSON.parse(out || "[]") as {
    ifname: string;
    flags: string[];
    addr_info?: { local: string }[];
  }[];
  return links
    .filter((l) => l.flags.includes("LOWER_UP"))
    .flatMap((l) => (l.addr_info ?? []).map((a) => `${a.local} on ${l.ifname}`));
}

/** The guest's NICs: a veth per pod NIC with a MAC, named gstN until sync names it, peer up. */
async function makeGuestNics(recipe: Recipe, guest: string, guestPeer: string): Promise<void> {
  for (const [i, nic] of recipe.nics.entries()) {
    if (!nic.mac) continue;
    await ipOk(
      "-n",
      guest,
      "link",
      "add",
      `gst${i}`,
      "address",
      nic.mac,
      "type",
      "veth",
      "peer",
      "name",
      `gp${i}`,
      "netns",
      guestPeer,
    );
    await ipOk("-n", guestPeer, "link", "set", `gp${i}`, "up");
    await ipOk("-n", guest, "link", "set", `gst${i}`, "up");
  }
}
