/** diff: the pod against the guest, side by side; exit 0 equal, 1 different. */
import { AgentService } from "../../gen/agent_pb";
import { compareNetworks, renderComparison } from "../diff";
import {
  compareRules,
  type RulesComparison,
  readGuestRules,
  readPodRules,
} from "../iptables-mirror";
import { addRulesSection, withRules } from "../iptables-report";
import {
  type Command,
  describeError,
  ExitError,
  parseFlags,
  UsageError,
  withClient,
} from "./common";
import { POD_SOURCE_HELP, podSource } from "./pod-source";

const HELP = `usage: netagentctl diff (--netns NAME|PATH | --cni-result FILE) [--addr ADDR] [--json]

Compares what sync would send for the pod with what the agent reports
(ListInterfaces, ListRoutes) and prints both side by side:
  =  same   ~  differs   <  pod only   >  guest only
Interfaces are matched by MAC (name, MTU, NOARP, addresses; link-local
addresses the guest made itself are ignored); routes without metric and
protocol, which the Kata protocol does not carry; the guest's kernel prefix
routes are left out. Neighbours are not compared (the agent cannot list them).

${POD_SOURCE_HELP}
Options: --addr ADDR, --timeout S, --json ({"equal":..., "interfaces":[...], "routes":[...]})

Exit codes: 0 equal; 1 different; 2 usage or bad input; 3 could not compare
(the agent or the pod could not be read; the error is printed).
`;

export const diff: Command = {
  name: "diff",
  summary: "compare the pod with the guest side by side (exit 0 equal, 1 different)",
  help: HELP,
  async run(args, ctx) {
    const flags = parseFlags(args, { "--netns": "value", "--cni-result": "value" });
    const source = podSource(flags);
    let comparison: ReturnType<typeof compareNetworks>;
    let rules: RulesComparison | undefined;
    try {
      const pod = await source.read();
      const podRules = source.netns === undefined ? undefined : await readPodRules(source.netns);
      const guest = await withClient(ctx, async (c) => {
        const call = { timeoutMs: ctx.timeoutMs };
        const interfaces = await c.unary(AgentService.method.listInterfaces, {}, call);
        const routes = await c.unary(AgentService.method.listRoutes, {}, call);
        const guestRules = podRules && (await readGuestRules(c, call));
        return { interfaces: interfaces.Interfaces, routes: routes.Routes, rules: guestRules };
      });
      comparison = compareNetworks(pod, guest);
      if (podRules !== undefined) {
        rules = compareRules(podRules, guest.rules);
        comparison = withRules(comparison, rules);
      }
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new ExitError(describeError(err), 3, { cause: err });
    }
    const text = ctx.json
      ? `${JSON.stringify({ ...comparison, iptables: rules })}\n`
      : renderComparison(comparison, {
          pod: `POD (${source.label})`,
          guest: `GUEST (${ctx.addr})`,
        });
    ctx.write(rules === undefined || ctx.json ? text : addRulesSection(text, rules));
    return comparison.equal ? 0 : 1;
  },
};
