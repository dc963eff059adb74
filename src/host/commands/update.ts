/**
 * update-routes, update-interface, add-neighbors: one call each, the
 * request read from a JSON file (protobuf JSON of the request, or of its
 * inner message, or a bare list), the answer printed as a table or JSON.
 * A file that does not parse is refused here, before anything is sent.
 */
import {
  type DescMessage,
  fromJson,
  type JsonValue,
  type MessageShape,
  toJson,
} from "@bufbuild/protobuf";
import {
  AddARPNeighborsRequestSchema,
  AgentService,
  UpdateInterfaceRequestSchema,
  UpdateRoutesRequestSchema,
} from "../../gen/agent_pb";
import { InterfaceSchema } from "../../gen/types_pb";
import { interfacesTable } from "../print/table";
import { type Command, parseFlags, readInput, UsageError, withClient } from "./common";
import { printRoutes } from "./list";

const EXIT = `Exit codes: 0 ok; 1 the agent refused or failed (CODE: message printed; the
agent changes all or nothing); 2 usage or an unreadable/invalid file (nothing sent).
`;

/**
 * Reads `--file` and wraps it into `schema`'s JSON: `outer` is the request's
 * field, `inner` the list field of the message inside it.
 */
function readRequest<S extends DescMessage>(
  args: string[],
  schema: S,
  shape: { outer: string; inner?: string },
  expected: string,
): MessageShape<S> {
  const flags = parseFlags(args, { "--file": "value" });
  const path = flags["--file"];
  if (typeof path !== "string") throw new UsageError('--file FILE is required ("-" for stdin)');
  const text = readInput("--file", path);
  let json: JsonValue;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--file ${path}: not JSON: ${(err as Error).message}`);
  }
  let wrapped: JsonValue;
  if (Array.isArray(json) && shape.inner) wrapped = { [shape.outer]: { [shape.inner]: json } };
  else if (json && typeof json === "object" && !Array.isArray(json)) {
    if (shape.outer in json) wrapped = json;
    else if (shape.inner ? shape.inner in json : Object.keys(json).length > 0)
      wrapped = { [shape.outer]: json };
    else throw new UsageError(`--file ${path}: expected ${expected}`);
  } else throw new UsageError(`--file ${path}: expected ${expected}`);
  try {
    return fromJson(schema, wrapped);
  } catch (err) {
    throw new UsageError(`--file ${path}: ${(err as Error).message}`);
  }
}

export const updateRoutes: Command = {
  name: "update-routes",
  summary: "make the guest's table exactly the given routes (UpdateRoutes)",
  help: `usage: netagentctl update-routes --file FILE [--json]

Sends one UpdateRoutes: afterwards the guest's main table holds exactly these
routes (plus kernel prefix routes none of them supersedes). FILE ("-" for
stdin) holds {"routes":{"Routes":[...]}}, {"Routes":[...]} (list-routes --json)
or a bare [...] of routes, e.g.
  [{"dest":"","gateway":"10.0.0.1","device":"eth0","family":"v4"}]
Prints the resulting table.
${EXIT}`,
  async run(args, ctx) {
    const req = readRequest(
      args,
      UpdateRoutesRequestSchema,
      { outer: "routes", inner: "Routes" },
      '{"routes":{"Routes":[...]}}, {"Routes":[...]} or [...]',
    );
    const r = await withClient(ctx, (c) =>
      c.unary(AgentService.method.updateRoutes, req, { timeoutMs: ctx.timeoutMs }),
    );
    return printRoutes(ctx, r);
  },
};

export const updateInterface: Command = {
  name: "update-interface",
  summary: "configure one interface, found by MAC (UpdateInterface)",
  help: `usage: netagentctl update-interface --file FILE [--json]

Sends one UpdateInterface: the link with hwAddr gets the name, MTU, NOARP
(raw_flags & 0x80) and exactly the addresses given, and is set up. FILE ("-"
for stdin) holds {"interface":{...}} or the interface itself, e.g.
  {"name":"eth0","hwAddr":"02:00:00:00:00:01","mtu":1500,
   "IPAddresses":[{"family":"v4","address":"10.0.0.2","mask":"24"}]}
Prints the interface as it now is. No retry here (sync retries).
${EXIT}`,
  async run(args, ctx) {
    const req = readRequest(
      args,
      UpdateInterfaceRequestSchema,
      { outer: "interface" },
      '{"interface":{...}} or an interface object',
    );
    const r = await withClient(ctx, (c) =>
      c.unary(AgentService.method.updateInterface, req, { timeoutMs: ctx.timeoutMs }),
    );
    ctx.write(ctx.json ? `${JSON.stringify(toJson(InterfaceSchema, r))}\n` : interfacesTable([r]));
    return 0;
  },
};

export const addNeighbors: Command = {
  name: "add-neighbors",
  summary: "add or replace ARP/NDP neighbours (AddARPNeighbors)",
  help: `usage: netagentctl add-neighbors --file FILE [--json]

Sends one AddARPNeighbors (replace semantics; state 0 = permanent). FILE ("-"
for stdin) holds {"neighbors":{"ARPNeighbors":[...]}}, {"ARPNeighbors":[...]}
or a bare [...], e.g.
  [{"toIPAddress":{"family":"v4","address":"10.0.0.1"},"device":"eth0",
    "lladdr":"02:00:00:00:00:02","state":128}]
${EXIT}`,
  async run(args, ctx) {
    const req = readRequest(
      args,
      AddARPNeighborsRequestSchema,
      { outer: "neighbors", inner: "ARPNeighbors" },
      '{"neighbors":{"ARPNeighbors":[...]}}, {"ARPNeighbors":[...]} or [...]',
    );
    await withClient(ctx, (c) =>
      c.unary(AgentService.method.addARPNeighbors, req, { timeoutMs: ctx.timeoutMs }),
    );
    const n = req.neighbors?.ARPNeighbors.length ?? 0;
    ctx.write(
      ctx.json
        ? `${JSON.stringify({ added: n })}\n`
        : `${n} neighbour${n === 1 ? "" : "s"} added\n`,
    );
    return 0;
  },
};
