/**
 * policy: writes a guest network policy (docs/policy.md) for a pod
 * (`--netns`, `--cni-result`) or for every pod of a CNI network
 * (`--cni-config`), as JSON on stdout. No agent is called.
 */
import { create } from "@bufbuild/protobuf";
import { validateApply } from "../../agent/validate/validate-state";
import { StateSchema } from "../../gen/network_pb";
import { hasRules } from "../../net/iptables/iptables-text";
import { readPodRules } from "../pod/iptables-pod";
import { defaultFor, readFreshDefaults } from "../pod/pod-state";
import { CniConfigError, policyForCniConfig } from "../policy/policy-from-cni-config";
import { GenpolicyError, policyForGenpolicy } from "../policy/policy-from-genpolicy";
import { policyForKata, policyForState } from "../policy/policy-from-pod";
import { applyRequestFor } from "../sync/drive-state";
import { type Command, parseFlags, readInput, UsageError } from "./common";
import { podSource } from "./pod-source";

const HELP = `usage: netagentctl policy --netns NAME|PATH | --cni-result FILE | --cni-config FILE
                         | --genpolicy-settings FILE

Prints (JSON) the guest network policy for a pod, to give the agent with
--policy, netagent.policy= or the pod's init data entry netagent-policy:
  --netns NAME|PATH    the tightest policy admitting exactly this pod's
                       network as sync mirrors it (its MACs, addresses,
                       route destinations, gateways, tables, rules,
                       neighbours, sysctls; its packet filter if it has
                       one), and the reads sync and diff need
  --cni-result FILE    the same from a CNI ADD result (what Kata carries)
  --cni-config FILE    the policy for every pod of a CNI network (a network
                       configuration list): prefixes from its IPAM ranges
                       and routes, MACs and names open
  --genpolicy-settings FILE
                       the policy admitting what the network rules of Kata's
                       genpolicy admit, from its settings file
                       (request_defaults); a deny list netagent cannot say
                       is refused

Exit codes: 0 written; 1 the pod could not be read; 2 usage or bad input.
`;

export const policy: Command = {
  name: "policy",
  summary: "print the guest network policy admitting a pod's (or a CNI network's) network",
  help: HELP,
  async run(args, ctx) {
    const flags = parseFlags(args, {
      "--netns": "value",
      "--cni-result": "value",
      "--cni-config": "value",
      "--genpolicy-settings": "value",
    });
    const config = flags["--cni-config"];
    const settings = flags["--genpolicy-settings"];
    const sources = ["--netns", "--cni-result", "--cni-config", "--genpolicy-settings"];
    if (sources.filter((f) => flags[f] !== undefined).length !== 1) {
      throw new UsageError(`give exactly one of ${sources.join(", ")}`);
    }
    let out: unknown;
    if (typeof settings === "string") {
      try {
        out = policyForGenpolicy(readInput("--genpolicy-settings", settings));
      } catch (err) {
        if (err instanceof GenpolicyError) {
          throw new UsageError(`--genpolicy-settings ${settings}: ${err.message}`);
        }
        throw err;
      }
    } else if (typeof config === "string") {
      try {
        out = policyForCniConfig(readInput("--cni-config", config));
      } catch (err) {
        if (err instanceof CniConfigError) {
          throw new UsageError(`--cni-config ${config}: ${err.message}`);
        }
        throw err;
      }
    } else {
      const source = podSource(flags);
      if (source.readState && source.netns) {
        const pod = await source.readState();
        const fresh = await readFreshDefaults();
        const { request } = applyRequestFor(pod, create(StateSchema), fresh);
        const desired = validateApply(request);
        const defaults = new Map<string, string>();
        for (const s of desired.sysctls) {
          const def = defaultFor(s.key, fresh);
          if (def !== undefined) defaults.set(s.key, def);
        }
        const rules = await readPodRules(source.netns);
        out = policyForState(desired, {
          defaults,
          packetFilter: hasRules(rules[4]) || hasRules(rules[6]),
        });
      } else {
        out = policyForKata(await source.read());
      }
    }
    ctx.write(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  },
};
