/**
 * netagentctl: drive a netagent from the host.
 * Exit codes: 0 success, 1 the call failed (status printed), 2 usage error.
 */
import {
  createRegistry,
  type DescMethod,
  type DescService,
  fromBinary,
  fromJson,
  type JsonValue,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import { AgentService } from "../gen/agent_pb";
import { Health, HealthCheckResponse_ServingStatus } from "../gen/health_pb";
import { codeName, TtrpcError } from "../ttrpc/codes";
import { AgentClient } from "./client";
import { commandSummaries, findCommand, runCommand } from "./commands";
import { createProgress } from "./progress";

const USAGE = `usage: netagentctl [--addr ADDR] [--timeout SECONDS] [--json] COMMAND [ARGS]

Commands:
  check                                 grpc.Health/Check
  version                               grpc.Health/Version
  call SERVICE METHOD [--data JSON]     any method, request and answer as protobuf JSON
${commandSummaries()}

Options:
  --addr ADDR      unix:///path, vsock://CID:PORT or hvsock:///uds:PORT
                   (default: $NETAGENT_ADDR, else unix:///run/netagent.sock)
  --timeout S      per-call deadline in seconds (default 30)
  --json           machine-readable output
  --help           this text; \`netagentctl COMMAND --help\` for one command

Exit codes: 0 ok, 1 the agent answered with an error (CODE: message printed), 2 usage
or bad input (nothing sent); diff: 0 equal, 1 different, 3 could not compare.
`;

const SERVICES: DescService[] = [Health, AgentService];
const jsonRegistry = createRegistry(...SERVICES);

class UsageError extends Error {}

interface Global {
  addr: string;
  timeoutMs: number;
  json: boolean;
  rest: string[];
}

function parseGlobal(argv: string[]): Global | "help" {
  const g: Global = {
    addr: process.env.NETAGENT_ADDR ?? "unix:///run/netagent.sock",
    timeoutMs: 30_000,
    json: false,
    rest: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--help" || a === "-h") {
      if (g.rest.length === 0) return "help";
      g.rest.push(a);
    } else if (a === "--json") g.json = true;
    else if (a === "--addr") g.addr = need(argv, ++i, a);
    else if (a === "--timeout") {
      const s = Number(need(argv, ++i, a));
      if (!(s > 0)) throw new UsageError(`--timeout: invalid value ${JSON.stringify(argv[i])}`);
      g.timeoutMs = s * 1000;
    } else g.rest.push(a);
  }
  return g;
}

function need(argv: string[], i: number, flag: string): string {
  const v = argv[i];
  if (v === undefined) throw new UsageError(`${flag} needs a value`);
  return v;
}

function findMethod(service: string, method: string): DescMethod {
  const svc = SERVICES.find((s) => s.typeName === service);
  const m = svc?.methods.find((x) => x.name === method);
  if (!m) {
    const known = SERVICES.flatMap((s) => s.methods.map((x) => `${s.typeName} ${x.name}`));
    throw new UsageError(`unknown method ${service} ${method}; known:\n  ${known.join("\n  ")}`);
  }
  return m;
}

async function run(argv: string[]): Promise<number> {
  const g = parseGlobal(argv);
  if (g === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  const [command, ...args] = g.rest;
  if (command === undefined) throw new UsageError("no command given");
  const sub = findCommand(command);
  if (sub) {
    return runCommand(sub, args, {
      addr: g.addr,
      timeoutMs: g.timeoutMs,
      json: g.json,
      progress: createProgress(),
      write: (text) => process.stdout.write(text),
    });
  }
  if (args.includes("--help") || args.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  const opts = { timeoutMs: g.timeoutMs };
  const out = (human: string, json: unknown) =>
    process.stdout.write(g.json ? `${JSON.stringify(json)}\n` : `${human}\n`);

  switch (command) {
    case "check": {
      if (args.length) throw new UsageError(`check takes no arguments`);
      const client = await AgentClient.connect(g.addr, g.timeoutMs);
      try {
        const r = await client.unary(Health.method.check, {}, opts);
        const status = HealthCheckResponse_ServingStatus[r.status] ?? String(r.status);
        out(status, { status });
        return r.status === HealthCheckResponse_ServingStatus.SERVING ? 0 : 1;
      } finally {
        client.close();
      }
    }
    case "version": {
      if (args.length) throw new UsageError(`version takes no arguments`);
      const client = await AgentClient.connect(g.addr, g.timeoutMs);
      try {
        const r = await client.unary(Health.method.version, {}, opts);
        out(`agent ${r.agentVersion}, api ${r.grpcVersion}`, {
          agentVersion: r.agentVersion,
          grpcVersion: r.grpcVersion,
        });
        return 0;
      } finally {
        client.close();
      }
    }
    case "call": {
      const [service, methodName, ...more] = args;
      if (!service || !methodName) throw new UsageError("call needs SERVICE and METHOD");
      let data: JsonValue = {};
      for (let i = 0; i < more.length; i++) {
        if (more[i] === "--data") {
          try {
            data = JSON.parse(need(more, ++i, "--data"));
          } catch (err) {
            if (err instanceof UsageError) throw err;
            throw new UsageError(`--data: not JSON: ${(err as Error).message}`);
          }
        } else throw new UsageError(`unexpected argument ${JSON.stringify(more[i])}`);
      }
      const method = findMethod(service, methodName);
      let payload: Uint8Array;
      try {
        payload = toBinary(method.input, fromJson(method.input, data, { registry: jsonRegistry }));
      } catch (err) {
        throw new UsageError(`--data: ${(err as Error).message}`);
      }
      const client = await AgentClient.connect(g.addr, g.timeoutMs);
      try {
        const reply = await client.raw(service, methodName, payload, opts);
        const json = toJson(method.output, fromBinary(method.output, reply), {
          registry: jsonRegistry,
        });
        process.stdout.write(`${JSON.stringify(json, null, g.json ? 0 : 2)}\n`);
        return 0;
      } finally {
        client.close();
      }
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof UsageError) {
      process.stderr.write(`netagentctl: ${err.message}\n\n${USAGE}`);
      process.exit(2);
    }
    if (err instanceof TtrpcError) {
      process.stderr.write(`netagentctl: ${codeName(err.code)}: ${err.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`netagentctl: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
