/** sync: mirror a pod's network into the guest: one Apply, or as the Kata runtime does. */
import { toJson } from "@bufbuild/protobuf";
import { InterfaceSchema, RouteSchema } from "../../gen/types_pb";
import { readAddressesBoth } from "../compare/complete-sources";
import { TENTATIVE_WAIT_MS, waitedWords, waitUntilUsable } from "../compare/usable-addresses";
import type { SyncRequests } from "../pod/pod-requests";
import { mirrorLines } from "../print/iptables-report";
import { escapeControls } from "../print/safe-text";
import { KATA_RETRY } from "../sync/retry";
import { type ApplyReport, type PodReport, readPodState, syncPod } from "../sync/sync-once";
import { stillTentativeText, type Verification, verifySync } from "../sync/sync-verify";
import { type Command, parseFlags, UsageError, withClient } from "./common";
import { POD_SOURCE_HELP, podSource } from "./pod-source";
import { runWatch, WATCH_HELP } from "./sync-watch";

/** The exit code of a sync through Apply that left something of the pod out. */
const INCOMPLETE = 4;

const HELP = `usage: netagentctl sync (--netns NAME|PATH | --cni-result FILE) [--addr ADDR]
                        [--attempts N] [--dry-run] [--json]
       netagentctl sync --watch --netns NAME|PATH [--debounce MS] [--addr ADDR] [--json]

From a namespace, when the agent offers netagent.v1.Network (probed once
with Get): the pod's whole state in one Apply (exact): interfaces, routes of
every table, ip rules, permanent neighbours, and the sysctls that differ
from a fresh namespace's defaults on this host (plus those defaults for
keys the guest has changed and the pod has not). \`netagentctl plan\`
shows the plan. (--watch still resyncs with the Kata sequence.)

Otherwise (a CNI result, --kata, or an agent answering UNIMPLEMENTED), it
drives the agent the way the Kata runtime does, and lists what of the pod
that sequence could not carry (ip rules, other tables, sysctls):
Health.Check; one UpdateInterface per interface (retried with exponential
backoff and jitter, 20 ms·2^n capped at 2 s plus 0-100 ms, up to 20 attempts,
only while the answer says "Link not found": the guest's NIC may still be
hot-plugging; the agent itself waits for the link until the call's deadline); one UpdateRoutes with all
routes; AddARPNeighbors when there are neighbours to copy (UNIMPLEMENTED is
tolerated).

From a namespace: every link but lo with its MAC, MTU, all addresses (IPv6
link-local included) and NOARP flag; main-table routes of both families
except proto kernel; neighbours that are permanent, or the default gateway
while reachable, with a MAC.

${POD_SOURCE_HELP}
${WATCH_HELP}Options:
  --attempts N         UpdateInterface attempts per interface (default 20)
  --kata               use the Kata sequence even when the agent offers Apply
  --dry-run            print the Kata requests (protobuf JSON) and send nothing
  --addr ADDR, --timeout S (per call), --json

A pod link is the guest's NIC of its MAC, found by MAC and configured (a
tap too: the runtime attaches it to the VM); a tun is made in the guest.
Through Apply, what the guest cannot have is left out and the rest synced:
a link without a MAC other than a tun, two links of one MAC, a link no
runtime makes a NIC of (no addresses, a bridge) whose MAC the guest lacks,
each with its routes, neighbours and sysctls; what netagent.v1 does not
carry, and what the guest's kernel
refuses (Apply's best_effort: a line it fails, a sysctl it lacks). Each is
listed under "not mirrored" with why, and the exit code is ${INCOMPLETE}.

From a namespace, an Apply is followed by the complete comparison diff
makes (everything ip -d -j and /proc/sys/net show on both sides, less what
legitimately differs; see diff --help): whatever it still finds is listed
under "still different" and the mirror counts as incomplete. It is made
once the guest can use every address the pod can use: no guest address on
a mirrored link tentative (IPv6 duplicate address detection, one to two
seconds after a NIC is renamed or comes up) where the pod's is not, waited
for at most ${TENTATIVE_WAIT_MS / 1000} s (the wait is printed); an address still tentative
then is listed as "still tentative".

Exit codes: 0 synced (from a namespace: and the complete reads agree);
1 a call failed (CODE: message printed; what was applied before it stays);
2 usage or bad input (nothing sent); ${INCOMPLETE} synced, but the mirror is
incomplete (what was left out, or still differs, is listed; on the Kata
path: what the Kata services cannot carry, or a link it skipped).
`;

function requestsJson(r: SyncRequests) {
  return {
    interfaces: r.interfaces.map((i) => toJson(InterfaceSchema, i)),
    routes: r.routes.map((x) => toJson(RouteSchema, x)),
    neighbors: r.neighbors.length,
    skipped: r.skipped,
  };
}

export const sync: Command = {
  name: "sync",
  summary: "mirror a pod netns or CNI result into the guest (one Apply, or the runtime's order)",
  help: HELP,
  async run(args, ctx) {
    const flags = parseFlags(args, {
      "--netns": "value",
      "--cni-result": "value",
      "--attempts": "value",
      "--dry-run": "bool",
      "--kata": "bool",
      "--watch": "bool",
      "--debounce": "value",
    });
    const attempts =
      flags["--attempts"] === undefined ? KATA_RETRY.attempts : Number(flags["--attempts"]);
    if (!Number.isInteger(attempts) || attempts < 1 || attempts > 100) {
      throw new UsageError(
        `--attempts: ${JSON.stringify(flags["--attempts"])} is not a count from 1 to 100`,
      );
    }
    const source = podSource(flags);
    const options = { timeoutMs: ctx.timeoutMs, retry: { ...KATA_RETRY, attempts } };
    if (flags["--watch"] || flags["--debounce"] !== undefined) {
      return runWatch(flags, ctx, source, options);
    }
    ctx.progress.update(`reading ${source.label}`);
    const pod = await readPodState(source, { full: true });
    const { requests, rules: podRules } = pod;
    if (flags["--dry-run"]) {
      ctx.progress.clear();
      ctx.write(`${JSON.stringify(requestsJson(requests), null, ctx.json ? 0 : 2)}\n`);
      return 0;
    }
    const { outcome, verified, usable } = await withClient(ctx, async (client) => {
      const kata = flags["--kata"] === true;
      const outcome = await syncPod(client, pod, { ...options, progress: ctx.progress, kata });
      const { netns } = source;
      if (netns === undefined) return { outcome };
      if (outcome.kind !== "apply") {
        // No complete check on this path, but the same rule for addresses (an agent with Read).
        ctx.progress.update(
          "waiting for the guest's addresses to leave duplicate address detection",
        );
        const read = () => readAddressesBoth(client, netns, ctx.timeoutMs);
        return { outcome, usable: await waitUntilUsable(read) };
      }
      ctx.progress.update("reading both sides completely (the check of the verdict)");
      const check = { netns, label: source.label, timeoutMs: ctx.timeoutMs };
      return { outcome, verified: await verifySync(client, check) };
    });
    ctx.progress.clear();
    const rules = outcome.rules;
    const rulesLost = "unimplemented" in rules && rules.unimplemented && podRules !== undefined;
    if (outcome.kind === "apply") {
      const macs = new Set((pod.full?.links ?? []).map((l) => l.mac));
      ctx.write(
        applyReport(outcome.apply, {
          label: source.label,
          addr: ctx.addr,
          json: ctx.json,
          macs,
          rules,
          verified,
        }),
      );
      if (rulesLost) return 1;
      const incomplete =
        outcome.apply.notMirrored.length > 0 || (verified?.findings.length ?? 0) > 0;
      return incomplete ? INCOMPLETE : 0;
    }
    const { sync: report } = outcome;
    const missed = [...outcome.missed, ...(usable?.still ?? []).map(stillTentativeText)];
    if (ctx.json) {
      ctx.write(
        `${JSON.stringify({
          interfaces: report.interfaces.map((i) => ({
            hwAddr: i.hwAddr,
            name: i.name,
            attempts: i.attempts,
          })),
          routesSent: requests.routes.length,
          guestRoutes: report.routes.map((r) => toJson(RouteSchema, r)),
          neighbors: report.neighbors,
          skipped: requests.skipped,
          notMirrored: missed,
          iptables: rules,
          usable,
        })}\n`,
      );
      return rulesLost ? 1 : kataExit(missed, requests);
    }
    const lines = [`synced ${source.label} into ${ctx.addr}`];
    for (const i of report.interfaces) {
      const addrs = i.guest.IPAddresses.map((a) => `${a.address}/${a.mask}`).join(" ");
      const tries = i.attempts === 1 ? "" : ` (after ${i.attempts} attempts)`;
      lines.push(`  interface ${i.name} ${i.hwAddr} mtu ${i.guest.mtu}: ${addrs}${tries}`);
    }
    for (const s of requests.skipped) lines.push(`  skipped ${s.name}: ${s.why}`);
    lines.push(
      `  routes: ${requests.routes.length} sent, the guest's table now has ${report.routes.length}`,
    );
    const n = report.neighbors;
    lines.push(
      `  neighbours: ${n.sent === 0 ? "none to copy" : `${n.sent} sent${n.unimplemented ? " (agent: UNIMPLEMENTED, ignored)" : ""}`}`,
    );
    lines.push(...mirrorLines(rules));
    if (outcome.missed.length) {
      lines.push("  not mirrored (the Kata services cannot carry these):");
      for (const m of outcome.missed) lines.push(`    ${m}`);
    }
    const waited = usable && waitedWords(usable);
    if (waited) lines.push(`  ${waited}`);
    for (const u of usable?.still ?? []) lines.push(`    ${stillTentativeText(u)}`);
    // One line each, whatever the guest's names and addresses hold.
    ctx.write(`${lines.map(escapeControls).join("\n")}\n`);
    return rulesLost ? 1 : kataExit(missed, requests);
  },
};

/**
 * The Kata path's mirror is incomplete too when it cannot carry something
 * or left out a link of the pod (a CNI result's host end is not the pod's).
 */
function kataExit(missed: readonly string[], requests: SyncRequests): number {
  const lost = requests.skipped.some((s) => !s.hostSide);
  return missed.length > 0 || lost ? INCOMPLETE : 0;
}

/** What sync prints after an Apply. */
function applyReport(
  apply: ApplyReport,
  o: {
    label: string;
    addr: string;
    json: boolean;
    macs: Set<string>;
    rules: PodReport["rules"];
    verified: Verification | undefined;
  },
): string {
  if (o.json) {
    return `${JSON.stringify({ api: "netagent.v1.Network/Apply", plan: apply.plan, attempts: apply.attempts, notMirrored: apply.notMirrored, verified: o.verified, iptables: o.rules })}\n`;
  }
  const r = apply.result;
  const n = apply.plan.length;
  const lines = [
    `synced ${o.label} into ${o.addr} with one Apply (netagent.v1.Network): ${n} operation${n === 1 ? "" : "s"}`,
  ];
  if (apply.attempts > 1) {
    lines.push(`  a NIC was not there yet: Apply answered after ${apply.attempts} attempts`);
  }
  for (const i of (r?.interfaces ?? []).filter((x) => o.macs.has(x.mac))) {
    const addrs = i.addresses.map((a) => `${a.address}/${a.prefix}`).join(" ");
    // A tun has no MAC: its mode stands in its place.
    const id = i.mac || (i.tuntap ? `(${i.tuntap.mode})` : "(no MAC)");
    lines.push(`  interface ${i.name} ${id} mtu ${i.mtu}: ${addrs}`);
  }
  const tables = new Set((r?.routes ?? []).map((x) => x.table));
  const writes = apply.plan.filter((l) => l.startsWith("sysctl ")).length;
  lines.push(
    `  guest now: ${r?.routes.length ?? 0} routes in ${tables.size} table${tables.size === 1 ? "" : "s"}, ${r?.rules.length ?? 0} ip rules; ${writes} sysctl write${writes === 1 ? "" : "s"}`,
  );
  lines.push(...mirrorLines(o.rules));
  if (apply.notMirrored.length > 0) {
    lines.push("  not mirrored:");
    for (const m of apply.notMirrored) lines.push(`    ${m}`);
  }
  const v = o.verified;
  if (v && !v.checked) lines.push(`  not verified: ${v.why}`);
  if (v?.checked && v.waited) lines.push(`  ${v.waited}`);
  if (v?.checked && v.findings.length > 0) {
    lines.push("  still different after the Apply (a complete read of both sides):");
    for (const f of v.findings) lines.push(`    ${f}`);
  }
  if (v?.checked && v.carrier.length > 0) {
    lines.push(
      "  differs by carrier alone (the wire's, which no agent can mirror; not counted: see diff --help):",
    );
    for (const f of v.carrier) lines.push(`    ${f}`);
  }
  if (v?.checked && v.findings.length === 0)
    lines.push("  verified: a complete read of both sides finds nothing else that differs");
  return `${lines.map(escapeControls).join("\n")}\n`;
}
