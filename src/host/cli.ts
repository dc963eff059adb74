/**
 * netagentctl: drive a netagent from the host.
 * Exit codes: 0 success, 1 the call failed (status printed), 2 usage error.
 */
import { withStatus } from "../common/error-status";
import { codeName, TtrpcError } from "../ttrpc/codes";
import { commandSummaries, findCommand } from "./commands";
// One UsageError for the global flags and every command: exit 2, usage pointed at.
import { runCommand, UsageError, usageText } from "./commands/common";
import { createProgress } from "./print/progress";
import { escapeControls } from "./print/safe-text";

const USAGE = `usage: netagentctl [--addr ADDR] [--timeout SECONDS] [--json] COMMAND [ARGS]

Commands:
${commandSummaries()}

Options:
  --addr ADDR      unix:///path, vsock://CID:PORT or hvsock:///uds:PORT
                   (default: $NETAGENT_ADDR, else unix:///run/netagent.sock)
  --timeout S      per-call deadline in seconds (default 30)
  --json           machine-readable output
  --help           this text; \`netagentctl COMMAND --help\` for one command

Exit codes: 0 ok, 1 the agent answered with an error (CODE: message printed), 2 usage
or bad input (nothing sent); diff: 0 equal, 1 different, 3 could not compare;
route-get: 0 the same decision, 1 different, 3 could not ask.
`;

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

async function run(argv: string[]): Promise<number> {
  const g = parseGlobal(argv);
  if (g === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  const [command, ...args] = g.rest;
  if (command === undefined) throw new UsageError("no command given");
  const sub = findCommand(command);
  if (!sub) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  return runCommand(sub, args, {
    addr: g.addr,
    timeoutMs: g.timeoutMs,
    json: g.json,
    progress: createProgress(),
    write: (text) => process.stdout.write(text),
  });
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (thrown) => {
    const err = withStatus(thrown);
    if (err instanceof UsageError) {
      process.stderr.write(`netagentctl: ${usageText(err)}\n${USAGE}`);
      process.exit(2);
    }
    if (err instanceof TtrpcError) {
      process.stderr.write(`netagentctl: ${codeName(err.code)}: ${escapeControls(err.message)}\n`);
      process.exit(1);
    }
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`netagentctl: ${escapeControls(message)}\n`);
    process.exit(1);
  },
);
