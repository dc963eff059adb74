/** diff: the pod against the guest, side by side; exit 0 equal, 1 different. */

import type { AgentClient } from "../../client/client";
import { AgentService } from "../../gen/agent_pb";
import { MAX_LOOKUPS } from "../../net/iproute/route-lookup";
import { stateToWire } from "../../wire/state-map";
import { type CompleteComparison, compareBoth } from "../compare/complete-compare";
import {
  addSections,
  carrierSection,
  completeSection,
  mirrorDifferencesHelp,
  probesSection,
  type Section,
  sourceOrderSection,
  usableSection,
} from "../compare/complete-report";
import { type Comparison, compareNetworks, type Row, renderComparison } from "../compare/kata-diff";
import { compareStates, renderStateComparison, type StateComparison } from "../compare/state-diff";
import { TENTATIVE_WAIT_MS } from "../compare/usable-addresses";
import { readPodRules } from "../pod/iptables-pod";
import type { SyncRequests } from "../pod/pod-requests";
import { comparable, defaultFor, readFreshDefaults } from "../pod/pod-state";
import { addRulesSection, withRules } from "../print/iptables-report";
import { notMirrored, probeNetwork } from "../sync/drive-state";
import { compareRules, type RulesComparison, readGuestRules } from "../sync/iptables-mirror";
import { asEndpoints } from "../sync/mirror-scope";
import {
  type Command,
  describeError,
  ExitError,
  parseFlags,
  UsageError,
  withClient,
} from "./common";
import { POD_SOURCE_HELP, podSource } from "./pod-source";

const HELP = `usage: netagentctl diff (--netns NAME|PATH | --cni-result FILE) [--addr ADDR] [--kata] [--json]

Compares the pod with the guest and prints both side by side:
  =  same   ~  differs   <  pod only   >  guest only

From a namespace, when the agent offers netagent.v1.Network (Get): all of
it. Interfaces by MAC (name, MTU, NOARP, up, addresses; link-local addresses
the guest made itself are ignored), routes of every table with every
attribute, rules, permanent neighbours, and sysctls (the pod's that differ
from this host's fresh-namespace defaults; the guest's that differ where the
pod has the default).

Otherwise (a CNI result, --kata, or an agent with the Kata services only):
what ListInterfaces and ListRoutes can show (main table, no metric or
protocol; the guest's kernel prefix routes left out); whatever of the pod
the Kata API cannot carry (rules, other tables, sysctls) is listed as pod
only, so such a pod never compares EQUAL. Neighbours are not compared there.

From a namespace, the packet filter (iptables-save) is compared too, and
so is everything both sides show, read completely: everything \`ip -d -j\`
prints for links, addresses, routes of every table, rules, neighbours
(proxy entries too) and nexthop objects, and every file under
/proc/sys/net (the guest's through netagent.v1.Network Read). Whatever
differs there is a "not mirrored: ..." row, but for what legitimately
differs, which is this list and nothing else:
${mirrorDifferencesHelp()}
An agent without Read cannot be compared completely: exit 3.

The guest can use every address the pod can use, or diff does not say
EQUAL: before the complete reads, it waits (at most ${TENTATIVE_WAIT_MS / 1000} s, and says how long)
until no guest address on a mirrored link is tentative (IPv6 duplicate
address detection, one to two seconds after the address or its link came
up) where the pod's is not; one still tentative then is a difference.

--probes N (at most ${MAX_LOOKUPS}): N routing lookups drawn from the pod's own routes
and rules (destinations in and beside their prefixes, the sources, marks,
protocols, ports, uids and tos they name) asked in both (ip route get; the
guest's through RouteGet); every lookup that decides otherwise in the
guest is a row and a difference.

${POD_SOURCE_HELP}
Options: --addr ADDR, --timeout S, --kata, --json, --probes N

Exit codes: 0 equal; 1 different; 2 usage or bad input; 3 could not compare
(the agent or the pod could not be read; the error is printed).
`;

/** `--probes N`: 0 when not given; N from 1 to MAX_LOOKUPS. */
function probeCount(value: string | true | undefined): number {
  if (value === undefined) return 0;
  const n = Number(value);
  if (typeof value !== "string" || !/^[0-9]{1,7}$/.test(value) || n < 1 || n > MAX_LOOKUPS) {
    throw new UsageError(
      `--probes ${JSON.stringify(value)}: not a number from 1 to ${MAX_LOOKUPS}`,
    );
  }
  return n;
}

type Outcome = { kind: "state"; cmp: StateComparison } | { kind: "kata"; cmp: Comparison };

async function readKata(
  c: AgentClient,
  call: { timeoutMs: number },
  pod: SyncRequests,
): Promise<Comparison> {
  const interfaces = await c.unary(AgentService.method.listInterfaces, {}, call);
  const routes = await c.unary(AgentService.method.listRoutes, {}, call);
  return compareNetworks(pod, { interfaces: interfaces.Interfaces, routes: routes.Routes });
}

export const diff: Command = {
  name: "diff",
  summary: "compare the pod with the guest side by side (exit 0 equal, 1 different)",
  help: HELP,
  async run(args, ctx) {
    const flags = parseFlags(args, {
      "--netns": "value",
      "--cni-result": "value",
      "--kata": "bool",
      "--probes": "value",
    });
    const probes = probeCount(flags["--probes"]);
    if (probes > 0 && flags["--netns"] === undefined)
      throw new UsageError("--probes needs --netns");
    const source = podSource(flags);
    const titles = { pod: `POD (${source.label})`, guest: `GUEST (${ctx.addr})` };
    let outcome: Outcome;
    let rules: RulesComparison | undefined;
    let complete: CompleteComparison | undefined;
    try {
      const podRequests = await source.read();
      const podRules = source.netns === undefined ? undefined : await readPodRules(source.netns);
      const readState = source.readState;
      const got = await withClient(ctx, async (c) => {
        const call = { timeoutMs: ctx.timeoutMs };
        const guestRules = podRules && (await readGuestRules(c, call));
        const whole =
          source.netns === undefined
            ? undefined
            : await compareBoth(c, {
                netns: source.netns,
                label: source.label,
                probes,
                timeoutMs: ctx.timeoutMs,
              });
        const guest =
          readState && !flags["--kata"] ? await probeNetwork(c, ctx.timeoutMs) : undefined;
        const pod = readState ? await readState() : undefined;
        if (guest && pod) {
          const fresh = await readFreshDefaults();
          const cmp = compareStates(
            // A pod's tap is the guest's NIC of its MAC, as sync sends it.
            stateToWire({ ...pod, links: asEndpoints(pod.links) }),
            guest,
            (k) => defaultFor(k, fresh),
            comparable,
          );
          return { outcome: { kind: "state", cmp } as Outcome, guestRules, whole };
        }
        const kata = await readKata(c, call, podRequests);
        const missed: Row[] = (pod ? notMirrored(pod) : []).map((m) => ({
          mark: "<",
          pod: m,
          guest: "- (the Kata API cannot carry it)",
        }));
        const differences = kata.differences + missed.length;
        const cmp = {
          ...kata,
          routes: [...kata.routes, ...missed],
          differences,
          equal: differences === 0,
        };
        return { outcome: { kind: "kata", cmp } as Outcome, guestRules, whole };
      });
      outcome = got.outcome;
      complete = got.whole;
      if (podRules !== undefined) {
        rules = compareRules(podRules, got.guestRules);
        if (outcome.kind === "kata") outcome = { kind: "kata", cmp: withRules(outcome.cmp, rules) };
        else {
          const differences = outcome.cmp.differences + rules.differences;
          outcome = {
            kind: "state",
            cmp: { ...outcome.cmp, differences, equal: differences === 0 },
          };
        }
      }
      if (complete !== undefined) {
        const differences = outcome.cmp.differences + complete.differences;
        const counted = { differences, equal: differences === 0 };
        outcome =
          outcome.kind === "state"
            ? { kind: "state", cmp: { ...outcome.cmp, ...counted } }
            : { kind: "kata", cmp: { ...outcome.cmp, ...counted } };
      }
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new ExitError(describeError(err), 3, { cause: err });
    }
    if (ctx.json) {
      const { findings, carrier, sourceOrder, probes: asked } = complete ?? {};
      ctx.write(
        `${JSON.stringify({ ...outcome.cmp, iptables: rules, notMirrored: findings, carrier, sourceOrder, probes: asked, usable: complete?.usable })}\n`,
      );
      return outcome.cmp.equal ? 0 : 1;
    }
    let text =
      outcome.kind === "state"
        ? renderStateComparison(outcome.cmp, titles)
        : renderComparison(outcome.cmp, titles);
    if (rules !== undefined) text = addRulesSection(text, rules);
    if (complete !== undefined) {
      const usable = usableSection(complete.usable);
      const sections: Section[] = [completeSection(complete.findings), ...(usable ? [usable] : [])];
      if (complete.carrier.length) sections.push(carrierSection(complete.carrier));
      if (complete.probes) sections.push(probesSection(complete.probes));
      if (complete.sourceOrder.length || complete.probes?.sourceOnly?.length)
        sections.push(sourceOrderSection(complete.sourceOrder, complete.probes));
      text = addSections(text, sections);
    }
    ctx.write(text);
    return outcome.cmp.equal ? 0 : 1;
  },
};
