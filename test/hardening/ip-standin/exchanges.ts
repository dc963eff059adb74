/**
 * The exchange loop every stand-in `ip` shares (run by bun, see main.ts).
 * It speaks what the agent's resident session speaks
 * (`BIN -json -details -batch -`, exchanges ended by a `# netagent ...`
 * comment line) and what its one-shot runs speak (stdin written whole and
 * closed, or no stdin at all): each exchange is handed to a fault handler,
 * which runs the real iproute2 on some or all of its lines. Only node
 * builtins here: a stand-in starts once per ip process the agent runs.
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, writeSync } from "node:fs";
import { constants } from "node:os";

export const REAL_IP = existsSync("/usr/sbin/ip") ? "/usr/sbin/ip" : "/usr/bin/ip";

/** A line that ends an exchange: a comment, so iproute2 skips it but counts it. */
const MARKER = /^# netagent/;

/** A line that reads (a show/list), is blank or is a comment: not a change. */
const NOT_A_CHANGE = /^[a-z]+( -[46])? (show|list)( |$)|^$|^#/;

/** Whether a batch line changes something (by what it does, not by ip's flags). */
export function isChangeLine(line: string): boolean {
  return !NOT_A_CHANGE.test(line);
}

/**
 * `Command failed -:M` as the process that has already read `base` lines
 * would print it: iproute2 counts every line since it started.
 */
export function renumberFailures(stderr: string, base: number): string {
  if (base === 0) return stderr;
  return stderr.replace(/Command failed -:(\d+)/g, (_, m: string) => {
    return `Command failed -:${base + Number(m)}`;
  });
}

/** One exchange: its lines (terminators kept, marker dropped) and how to run them. */
export interface Exchange {
  /** The stand-in's argv (ip's options and, for a plain command, the command). */
  argv: string[];
  /** Whether ip reads a batch on stdin (`-batch -`); false: a plain command, no lines. */
  batch: boolean;
  force: boolean;
  /** The lines, each with its "\n" (the last one may lack it at EOF), latin1: bytes kept. */
  lines: string[];
  /** Lines this process read before this exchange, markers included. */
  base: number;
  /** Exchanges this process served before this one (0: its first). */
  index: number;
  /** A batch that changes something and is not a best-effort restore (`-force`). */
  write: boolean;
  /** Changes nothing: a plain command, or a batch of show lines only. */
  read: boolean;
}

/** What a handler does with an exchange; a non-zero status ends the process with it. */
export type Handler = (x: Exchange) => Promise<number>;

/**
 * Runs the real ip with the exchange's argv on `lines` (all by default):
 * stdout goes straight to ours (the agent is waiting for it), stderr is
 * relayed once ip exits, its line numbers moved past `base + offset`.
 * Returns ip's status (128 + signal number when killed).
 */
export function runIp(
  x: Exchange,
  lines: readonly string[] = x.lines,
  opts: { offset?: number; quiet?: boolean } = {},
): Promise<number> {
  const child = spawn(REAL_IP, x.argv, {
    stdio: [x.batch ? "pipe" : "inherit", opts.quiet ? "ignore" : "inherit", "pipe"],
  });
  const err: Buffer[] = [];
  child.stderr?.on("data", (b: Buffer) => err.push(b));
  if (x.batch) {
    child.stdin?.on("error", () => {}); // ip stops reading at a failed line
    child.stdin?.end(Buffer.from(lines.join(""), "latin1"));
  }
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      const text = Buffer.concat(err).toString("latin1");
      if (text && !opts.quiet) {
        writeSync(2, Buffer.from(renumberFailures(text, x.base + (opts.offset ?? 0)), "latin1"));
      }
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });
}

/** The lines of stdin as they arrive, each with its "\n"; bytes kept (latin1). */
async function* stdinLines(): AsyncGenerator<string> {
  let partial = "";
  for await (const chunk of process.stdin) {
    const text = partial + (chunk as Buffer).toString("latin1");
    let from = 0;
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", from)) {
      yield text.slice(from, i + 1);
      from = i + 1;
    }
    partial = text.slice(from);
  }
  if (partial) yield partial;
}

/**
 * Serves `argv` with `handle`: a plain command is one exchange without
 * lines; a batch is read line by line, each marker (or EOF) ending an
 * exchange. Each exchange leaves "PID INDEX" in `log` as it starts
 * (ip-standin/log.ts). Exits with the first non-zero status, else 0 at EOF.
 */
export async function serve(argv: string[], log: string, handler: Handler): Promise<never> {
  const handle: Handler = (x) => {
    appendFileSync(log, `${process.pid} ${x.index}\n`);
    return handler(x);
  };
  const batch = argv.some((a, i) => a === "-batch" && argv[i + 1] === "-");
  const force = argv.includes("-force");
  let served = 0;
  const exchange = (lines: string[], base: number): Exchange => {
    const changes = batch && lines.some((l) => isChangeLine(l.replace(/\n$/, "")));
    const write = changes && !force;
    return { argv, batch, force, lines, base, index: served, write, read: !changes };
  };
  const finish = (status: number) => process.exit(status);
  if (!batch) return finish(await handle(exchange([], 0)));
  let lines: string[] = [];
  let base = 0;
  for await (const line of stdinLines()) {
    if (!MARKER.test(line)) {
      lines.push(line);
      continue;
    }
    const status = await handle(exchange(lines, base));
    if (status !== 0) return finish(status);
    base += lines.length + 1;
    served++;
    lines = [];
  }
  // EOF ends the last exchange: a one-shot run's whole stdin (even empty).
  if (lines.length > 0 || served === 0) return finish(await handle(exchange(lines, base)));
  return finish(0);
}
