/** route-get: one routing decision in the pod and in the guest, side by side. */
import {
  IP_PROTOCOLS,
  type LookupSpec,
  lookupProblem,
  lookupTo,
} from "../../net/iproute/route-lookup";
import { decisionWords, lookupText, sameDecision } from "../compare/lookup-compare";
import { guestDecisions, podDecisions } from "../compare/lookups-both";
import { resolveNetns } from "../pod/netns-arg";
import { escapeControls } from "../print/safe-text";
import { type Command, describeError, ExitError, UsageError, withClient } from "./common";

const HELP = `usage: netagentctl route-get --netns NAME|PATH [--addr ADDR] [--json] ADDRESS
         [from ADDRESS] [iif NAME] [oif NAME] [mark N] [ipproto P] [sport N]
         [dport N] [uid N] [tos N]

Asks the kernel of the pod (ip route get, in its namespace on this host)
and of the guest (netagent.v1.Network RouteGet) where a packet goes, and
prints both decisions side by side: the route chosen (via, dev, src, table,
...) or the kernel's refusal (prohibit: "Permission denied", unreachable:
"No route to host", no route: "Network is unreachable"). A refusal is a
decision too.

ADDRESS and from: addresses of one family; iif, oif: link names; mark,
uid: numbers (mark and tos also as 0x...); ipproto: a number 1-255 or tcp,
udp, icmp, ipv6-icmp, sctp, dccp, gre, esp, ah, igmp, udplite; sport,
dport: 1-65535; tos: 1-255.

Exit codes: 0 the same decision; 1 different decisions; 2 usage; 3 could
not ask (the error is printed).
`;

const NUMERIC = ["mark", "ipproto", "sport", "dport", "uid", "tos"] as const;
const NAMES = ["from", "iif", "oif"] as const;

function number(word: string, value: string): number {
  const named = word === "ipproto" ? IP_PROTOCOLS.get(value) : undefined;
  if (named !== undefined) return named;
  const hex = (word === "mark" || word === "tos") && /^0x[0-9a-f]{1,8}$/i.test(value);
  if (!hex && !/^[0-9]{1,10}$/.test(value)) {
    throw new UsageError(`${word} ${JSON.stringify(value)}: not a number`);
  }
  return Number(value);
}

/** The flags and the lookup's words; UsageError on anything else. */
export function parseRouteGetArgs(args: readonly string[]): { netns: string; lookup: LookupSpec } {
  let netns: string | undefined;
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--netns" || a.startsWith("--netns=")) {
      if (netns !== undefined) throw new UsageError("--netns given twice");
      netns = a.includes("=") ? a.slice("--netns=".length) : args[++i];
      if (!netns) throw new UsageError("--netns needs a value");
    } else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
    else words.push(a);
  }
  if (netns === undefined) throw new UsageError("--netns is required");
  const [to, ...rest] = words;
  if (to === undefined) throw new UsageError("the destination ADDRESS is required");
  const lookup = lookupTo(to);
  const seen = new Set<string>();
  for (let i = 0; i < rest.length; i += 2) {
    const word = rest[i] as string;
    const value = rest[i + 1];
    const known =
      (NUMERIC as readonly string[]).includes(word) || (NAMES as readonly string[]).includes(word);
    if (!known) throw new UsageError(`unexpected argument ${JSON.stringify(word)}`);
    if (value === undefined) throw new UsageError(`${word} needs a value`);
    if (seen.has(word)) throw new UsageError(`${word} given twice`);
    seen.add(word);
    if ((NAMES as readonly string[]).includes(word)) lookup[word as (typeof NAMES)[number]] = value;
    else lookup[word as (typeof NUMERIC)[number]] = number(word, value);
  }
  const p = lookupProblem(lookup);
  if (p)
    throw new UsageError(
      `${p.field === "to" ? "ADDRESS" : p.field} ${JSON.stringify(p.value)} ${p.why}`,
    );
  return { netns, lookup };
}

export const routeGet: Command = {
  name: "route-get",
  summary: "one routing decision in the pod and in the guest, side by side",
  help: HELP,
  async run(args, ctx) {
    const { netns, lookup } = parseRouteGetArgs(args);
    const resolved = resolveNetns(netns);
    if (typeof resolved !== "string") throw new UsageError(`--netns: ${resolved.reason}`);
    let pod: Awaited<ReturnType<typeof podDecisions>>;
    let guest: typeof pod;
    try {
      pod = await podDecisions(resolved, [lookup]).catch((err: Error) => {
        throw new Error(`looking up in netns ${netns} on this host: ${err.message}`, {
          cause: err,
        });
      });
      guest = await withClient(ctx, (c) => guestDecisions(c, [lookup], ctx.timeoutMs));
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new ExitError(describeError(err), 3, { cause: err });
    }
    const [p, g] = [pod[0], guest[0]] as [
      NonNullable<(typeof pod)[0]>,
      NonNullable<(typeof pod)[0]>,
    ];
    const same = sameDecision(p, g);
    if (ctx.json) {
      ctx.write(`${JSON.stringify({ lookup: lookupText(lookup), pod: p, guest: g, same })}\n`);
      return same ? 0 : 1;
    }
    const cells = [
      [" ", `POD (netns ${netns})`, `GUEST (${ctx.addr})`],
      [same ? "=" : "~", decisionWords(p), decisionWords(g)],
    ].map((r) => r.map(escapeControls));
    const width = Math.min(64, Math.max(...cells.map((r) => (r[1] as string).length)));
    const lines = cells.map(([m, l, r]) => `${m}  ${(l as string).padEnd(width)}  ${r}`.trimEnd());
    ctx.write(
      `${escapeControls(lookupText(lookup))}\n${lines.join("\n")}\nverdict: ${same ? "SAME" : "DIFFERENT (the guest decides otherwise)"}\n`,
    );
    return same ? 0 : 1;
  },
};
