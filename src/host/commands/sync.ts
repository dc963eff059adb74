/** sync: mirror a pod's network into the guest, as the Kata runtime does. */
import { toJson } from "@bufbuild/protobuf";
import { InterfaceSchema, RouteSchema } from "../../gen/types_pb";
import { mirrorLines } from "../iptables-report";
import { KATA_RETRY } from "../retry";
import { escapeControls } from "../safe-text";
import type { SyncRequests } from "../sync";
import { readPodState, syncOnce } from "../sync-once";
import { type Command, parseFlags, UsageError, withClient } from "./common";
import { POD_SOURCE_HELP, podSource } from "./pod-source";
import { runWatch, WATCH_HELP } from "./sync-watch";

const HELP = `usage: netagentctl sync (--netns NAME|PATH | --cni-result FILE) [--addr ADDR]
                        [--attempts N] [--dry-run] [--json]
       netagentctl sync --watch --netns NAME|PATH [--debounce MS] [--addr ADDR] [--json]

Reads the pod's network and drives the agent the way the Kata runtime does:
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
  --dry-run            print the requests (protobuf JSON) and send nothing
  --addr ADDR, --timeout S (per call), --json

Exit codes: 0 synced; 1 a call failed (CODE: message printed; what was
applied before it stays); 2 usage or bad input (nothing sent).
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
  summary: "mirror a pod netns or CNI result into the guest, in the runtime's order",
  help: HELP,
  async run(args, ctx) {
    const flags = parseFlags(args, {
      "--netns": "value",
      "--cni-result": "value",
      "--attempts": "value",
      "--dry-run": "bool",
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
    const pod = await readPodState(source);
    const { requests, rules: podRules } = pod;
    if (flags["--dry-run"]) {
      ctx.progress.clear();
      ctx.write(`${JSON.stringify(requestsJson(requests), null, ctx.json ? 0 : 2)}\n`);
      return 0;
    }
    const { sync: report, rules } = await withClient(ctx, (client) =>
      syncOnce(client, pod, { ...options, progress: ctx.progress }),
    );
    ctx.progress.clear();
    const rulesLost = "unimplemented" in rules && rules.unimplemented && podRules !== undefined;
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
          iptables: rules,
        })}\n`,
      );
      return rulesLost ? 1 : 0;
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
    // One line each, whatever the guest's names and addresses hold.
    ctx.write(`${lines.map(escapeControls).join("\n")}\n`);
    return rulesLost ? 1 : 0;
  },
};
