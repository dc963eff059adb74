/** iptables get|set: the guest's packet filter by hand (GetIPTables / SetIPTables). */
import { AgentService } from "../../gen/agent_pb";
import { type Command, parseFlags, UsageError, withClient } from "./common";
import { InputError, readInputBytes } from "./read-input";

const HELP = `usage: netagentctl iptables get [--ipv6]
       netagentctl iptables set [--ipv6] --file F

get prints what iptables-save (ip6tables-save with --ipv6) prints in the
guest (grpc.AgentService/GetIPTables). set sends F ("-" for stdin), the
input of iptables-restore (SetIPTables): the tables it names are replaced,
all or nothing; others are left alone. What the tool printed is shown.
A refused input is INVALID_ARGUMENT with the tool's line number and words.

Options: --addr ADDR, --timeout S
Exit codes: 0 ok, 1 the call failed (CODE: message printed), 2 usage or an
unreadable file (nothing sent).
`;

/** A regular file or stdin of at most 16 MiB (read-input.ts); else a UsageError. */
function readRules(path: string): Uint8Array {
  try {
    return readInputBytes(path);
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(`--file ${path}: ${err.message}`);
    throw err;
  }
}

export const iptables: Command = {
  name: "iptables",
  summary: "get or set the guest's iptables rules (GetIPTables / SetIPTables)",
  help: HELP,
  async run(args, ctx) {
    const [verb, ...rest] = args;
    if (verb !== "get" && verb !== "set") {
      throw new UsageError(
        verb === undefined ? "say get or set" : `unknown action ${JSON.stringify(verb)}`,
      );
    }
    const flags = parseFlags(
      rest,
      verb === "get" ? { "--ipv6": "bool" } : { "--ipv6": "bool", "--file": "value" },
    );
    const isIpv6 = flags["--ipv6"] === true;
    const call = { timeoutMs: ctx.timeoutMs };
    if (verb === "get") {
      const r = await withClient(ctx, (c) =>
        c.unary(AgentService.method.getIPTables, { isIpv6 }, call),
      );
      ctx.write(Buffer.from(r.data).toString("latin1"));
      return 0;
    }
    const file = flags["--file"];
    if (typeof file !== "string") throw new UsageError("set needs --file F");
    const data = readRules(file);
    const r = await withClient(ctx, (c) =>
      c.unary(AgentService.method.setIPTables, { isIpv6, data }, call),
    );
    ctx.write(Buffer.from(r.data).toString("latin1"));
    return 0;
  },
};
