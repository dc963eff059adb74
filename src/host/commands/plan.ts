/** plan: what Apply would do to make the guest the pod, in words; nothing changes. */
import { Network } from "../../gen/network_pb";
import { readFreshDefaults } from "../pod/pod-state";
import { renderPlan } from "../print/plan-words";
import { escapeControls } from "../print/safe-text";
import { applyRequestFor, probeNetwork } from "../sync/drive-state";
import { describeField } from "../sync/mirror-scope";
import { type Command, ExitError, parseFlags, UsageError, withClient } from "./common";
import { podSource } from "./pod-source";

const HELP = `usage: netagentctl plan --netns NAME|PATH [--addr ADDR] [--raw] [--json]

Reads the pod completely (as sync does), asks the agent for the plan of the
Apply that would mirror it (dry_run: nothing changes) and prints it grouped
by what it touches, in the order the agent would run it. --raw prints the
agent's own lines (ip -batch lines, then "sysctl KEY=VALUE" writes).

Needs an agent with netagent.v1.Network.

Exit codes: 0 planned (also when there is nothing to do); 1 the agent
refused (CODE: message); 2 usage; 3 the agent has no netagent.v1.Network.
`;

export const plan: Command = {
  name: "plan",
  summary: "print what sync would change in the guest (Apply dry run), in words",
  help: HELP,
  async run(args, ctx) {
    const flags = parseFlags(args, { "--netns": "value", "--raw": "bool" });
    if (typeof flags["--netns"] !== "string") throw new UsageError("--netns is required");
    const source = podSource({ "--netns": flags["--netns"] });
    const readState = source.readState as NonNullable<typeof source.readState>;
    const lines = await withClient(ctx, async (client) => {
      const guest = await probeNetwork(client, ctx.timeoutMs);
      if (!guest)
        throw new ExitError("the agent has no netagent.v1.Network (Kata services only)", 3);
      const pod = await readState();
      const { request, leftOut } = applyRequestFor(pod, guest, await readFreshDefaults(), true);
      const answer = await client.unary(Network.method.apply, request, {
        timeoutMs: ctx.timeoutMs,
      });
      const refused = answer.leftOut.map(
        (l) => `${describeField(request.desired, l.field)}: the guest refused it: ${l.reason}`,
      );
      return { plan: answer.plan, notMirrored: [...leftOut, ...refused] };
    });
    if (ctx.json) ctx.write(`${JSON.stringify(lines)}\n`);
    else if (flags["--raw"]) ctx.write(lines.plan.map((l) => `${l}\n`).join(""));
    else {
      const missed = lines.notMirrored.map((m) => `  ${escapeControls(m)}\n`).join("");
      ctx.write(
        `plan to make the guest at ${ctx.addr} match ${source.label}:\n${renderPlan(lines.plan)}${missed ? `not mirrored (sync would leave these out):\n${missed}` : ""}`,
      );
    }
    return 0;
  },
};
