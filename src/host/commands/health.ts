/** check, version and call: health and raw access to any method. */
import {
  createRegistry,
  type DescMethod,
  fromBinary,
  fromJson,
  type JsonValue,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import { SERVED_SERVICES } from "../../agent/server/services";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/health_pb";
import { escapeControls } from "../print/safe-text";
import { type Command, parseFlags, UsageError, withClient } from "./common";

/** What `call` can call: every service the agent serves, by the agent's own list. */
const SERVICES = SERVED_SERVICES;
const jsonRegistry = createRegistry(...SERVICES);
const SERVICE_NAMES = SERVICES.map((s) => s.typeName);

export const check: Command = {
  name: "check",
  summary: "grpc.Health/Check: is the agent serving?",
  help: `usage: netagentctl check [--json]

Calls grpc.Health/Check and prints the serving status.
Exit codes: 0 SERVING, 1 anything else or the call failed, 2 usage.
`,
  async run(args, ctx) {
    parseFlags(args, {});
    const r = await withClient(ctx, (c) =>
      c.unary(Health.method.check, {}, { timeoutMs: ctx.timeoutMs }),
    );
    const status = HealthCheckResponse_ServingStatus[r.status] ?? String(r.status);
    ctx.write(ctx.json ? `${JSON.stringify({ status })}\n` : `${status}\n`);
    return r.status === HealthCheckResponse_ServingStatus.SERVING ? 0 : 1;
  },
};

export const version: Command = {
  name: "version",
  summary: "grpc.Health/Version: the agent's and its API's versions",
  help: `usage: netagentctl version [--json]

Calls grpc.Health/Version.
Exit codes: 0 ok, 1 the call failed, 2 usage.
`,
  async run(args, ctx) {
    parseFlags(args, {});
    const r = await withClient(ctx, (c) =>
      c.unary(Health.method.version, {}, { timeoutMs: ctx.timeoutMs }),
    );
    const { agentVersion, grpcVersion } = r;
    ctx.write(
      ctx.json
        ? `${JSON.stringify({ agentVersion, grpcVersion })}\n`
        : `${escapeControls(`agent ${agentVersion}, api ${grpcVersion}`)}\n`,
    );
    return 0;
  },
};

function findMethod(service: string, method: string): DescMethod {
  const m = SERVICES.find((s) => s.typeName === service)?.methods.find((x) => x.name === method);
  if (!m) {
    const known = SERVICES.flatMap((s) => s.methods.map((x) => `${s.typeName} ${x.name}`));
    throw new UsageError(
      `unknown method ${service} ${method}; known:`,
      known.map((k) => `  ${k}`).join("\n"),
    );
  }
  return m;
}

export const call: Command = {
  name: "call",
  summary: "call SERVICE METHOD [--data JSON]: any method, protobuf JSON in and out",
  help: `usage: netagentctl call SERVICE METHOD [--data JSON] [--json]

Calls any method of ${SERVICE_NAMES.slice(0, -1).join(", ")} or ${SERVICE_NAMES.at(-1)} (the
services the agent serves) with the request given as protobuf JSON (default
{}), and prints the answer as protobuf JSON.
  netagentctl call grpc.AgentService ListRoutes
  netagentctl call netagent.v1.Network Get
  netagentctl call grpc.AgentService UpdateRoutes --data '{"routes":{"Routes":[...]}}'
Exit codes: 0 ok, 1 the call failed (CODE: message printed), 2 usage or bad JSON.
`,
  async run(args, ctx) {
    const [service, methodName, ...more] = args;
    if (!service || !methodName || service.startsWith("-") || methodName.startsWith("-")) {
      throw new UsageError("call needs SERVICE and METHOD");
    }
    const flags = parseFlags(more, { "--data": "value" });
    let data: JsonValue = {};
    if (typeof flags["--data"] === "string") {
      try {
        data = JSON.parse(flags["--data"]);
      } catch (err) {
        throw new UsageError(`--data: not JSON: ${(err as Error).message}`);
      }
    }
    const method = findMethod(service, methodName);
    let payload: Uint8Array;
    try {
      payload = toBinary(method.input, fromJson(method.input, data, { registry: jsonRegistry }));
    } catch (err) {
      throw new UsageError(`--data: ${(err as Error).message}`);
    }
    const reply = await withClient(ctx, (c) =>
      c.raw(service, methodName, payload, { timeoutMs: ctx.timeoutMs }),
    );
    const json = toJson(method.output, fromBinary(method.output, reply), {
      registry: jsonRegistry,
    });
    ctx.write(`${JSON.stringify(json, null, ctx.json ? 0 : 2)}\n`);
    return 0;
  },
};
