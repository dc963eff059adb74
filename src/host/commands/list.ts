/** list-interfaces and list-routes: the guest as the agent reports it. */
import { toJson } from "@bufbuild/protobuf";
import { AgentService, InterfacesSchema, type Routes, RoutesSchema } from "../../gen/agent_pb";
import { interfacesTable, routesTable } from "../print/table";
import { type Command, type CommandContext, parseFlags, withClient } from "./common";

const COMMON = `Options: --addr ADDR, --timeout S, --json (the answer as protobuf JSON).
Exit codes: 0 ok, 1 the call failed (CODE: message printed), 2 usage.
`;

export const listInterfaces: Command = {
  name: "list-interfaces",
  summary: "the guest's interfaces (grpc.AgentService/ListInterfaces)",
  help: `usage: netagentctl list-interfaces [--json]

Lists the guest's links with MAC, MTU, flags and every address.
${COMMON}`,
  async run(args, ctx) {
    parseFlags(args, {});
    const r = await withClient(ctx, (c) =>
      c.unary(AgentService.method.listInterfaces, {}, { timeoutMs: ctx.timeoutMs }),
    );
    ctx.write(
      ctx.json ? `${JSON.stringify(toJson(InterfacesSchema, r))}\n` : interfacesTable(r.Interfaces),
    );
    return 0;
  },
};

/** Writes the routes of an answer (ListRoutes', UpdateRoutes'): its JSON with --json, else a table; 0. */
export function printRoutes(ctx: CommandContext, r: Routes): number {
  ctx.write(ctx.json ? `${JSON.stringify(toJson(RoutesSchema, r))}\n` : routesTable(r.Routes));
  return 0;
}

export const listRoutes: Command = {
  name: "list-routes",
  summary: "the guest's main routing table, both families (ListRoutes)",
  help: `usage: netagentctl list-routes [--json]

Lists the guest's main-table routes of both families, kernel-made ones
included (the protocol does not mark them). The --json output ({"Routes":
[...]}) has the shape update-routes --file takes: edit it, drop the kernel
routes, send it back.
${COMMON}`,
  async run(args, ctx) {
    parseFlags(args, {});
    const r = await withClient(ctx, (c) =>
      c.unary(AgentService.method.listRoutes, {}, { timeoutMs: ctx.timeoutMs }),
    );
    return printRoutes(ctx, r);
  },
};
