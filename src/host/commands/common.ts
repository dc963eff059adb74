/**
 * What every netagentctl subcommand shares: its shape, flag parsing, input
 * files, connecting, and turning a failure into a message and an exit code.
 *
 * Exit codes: 0 success (diff: equal); 1 the call failed (the agent's
 * status CODE: message is printed; diff: pod and guest differ); 2 usage or
 * bad input (nothing was sent); 3 diff could not compare (error printed).
 */

import { AgentClient } from "../../client/client";
import { withStatus } from "../../common/error-status";
import { codeName, TtrpcError } from "../../ttrpc/codes";
import type { Progress } from "../print/progress";
import { escapeControls, terminalSafe } from "../print/safe-text";
import { InputError, readInputFile } from "./read-input";

/**
 * A bad flag or input file: exit 2, the command's help is pointed at. The
 * message is one line, printed escaped (it may quote the user's words);
 * `detail` is netagentctl's own text and prints below it as lines.
 */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly detail?: string,
  ) {
    super(message);
  }
}

/** A UsageError as it is printed after `PREFIX: `: the message escaped, then its detail's lines. */
export function usageText(err: UsageError): string {
  return `${escapeControls(err.message)}\n${err.detail ? terminalSafe(`${err.detail}\n`) : ""}`;
}

/** A failure with its own exit code (diff uses 3 so that 1 can mean "different"). */
export class ExitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface CommandContext {
  addr: string;
  timeoutMs: number;
  json: boolean;
  progress: Progress;
  write(text: string): void;
}

export interface Command {
  name: string;
  /** One line for the global usage. */
  summary: string;
  /** The full `COMMAND --help` text. */
  help: string;
  run(args: string[], ctx: CommandContext): Promise<number>;
}

export type FlagSpec = Record<string, "value" | "bool">;

/** Parses `--flag value` / `--flag` per `spec`; anything else is a UsageError. */
export function parseFlags(args: readonly string[], spec: FlagSpec): Record<string, string | true> {
  const out: Record<string, string | true> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const [flag = "", inline] = a.startsWith("--") ? a.split(/=(.*)/s, 2) : [a];
    // The spec's own flags only: not a name every object inherits (`toString`).
    const kind = Object.hasOwn(spec, flag) ? spec[flag] : undefined;
    if (kind === undefined) {
      throw new UsageError(
        a.startsWith("-") ? `unknown option ${a}` : `unexpected argument ${JSON.stringify(a)}`,
      );
    }
    if (Object.hasOwn(out, flag)) throw new UsageError(`${flag} given twice`);
    if (kind === "bool") {
      if (inline !== undefined) throw new UsageError(`${flag} takes no value`);
      out[flag] = true;
      continue;
    }
    const value = inline ?? args[++i];
    if (value === undefined || value === "") throw new UsageError(`${flag} needs a value`);
    out[flag] = value;
  }
  return out;
}

/**
 * Reads an input file ("-" is stdin): a regular file or stdin of at most
 * 16 MiB (read-input.ts); anything else, or an unreadable file, is a UsageError.
 */
export function readInput(flag: string, path: string): string {
  try {
    return readInputFile(path);
  } catch (err) {
    if (err instanceof InputError) throw new UsageError(`${flag} ${path}: ${err.message}`);
    throw err;
  }
}

/** Connects, runs `fn`, always closes. */
export async function withClient<T>(
  ctx: CommandContext,
  fn: (c: AgentClient) => Promise<T>,
): Promise<T> {
  const client = await AgentClient.connect(ctx.addr, ctx.timeoutMs);
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

/**
 * Runs a command: its --help, its result, or its failure as message + exit
 * code. Never throws. The output is written in one piece at the end, and
 * this resolves only once stdout has taken all of it: the caller exits.
 */
export async function runCommand(
  command: Command,
  args: string[],
  ctx: CommandContext,
): Promise<number> {
  // Bun's process.stdout.write can drop the tail of a large write to a pipe
  // when the process exits soon after (even after its callback); Bun.write
  // resolves once the bytes are written.
  const chunks: string[] = [];
  const code = await runCaught(command, args, { ...ctx, write: (text) => chunks.push(text) });
  try {
    // Guest strings are escaped where they are formatted; this catches the rest.
    if (chunks.length) await Bun.write(Bun.stdout, terminalSafe(chunks.join("")));
  } catch (err) {
    // The reader went away (`| head`): nothing left to tell it.
    if ((err as NodeJS.ErrnoException).code !== "EPIPE") throw err;
  }
  return code;
}

async function runCaught(command: Command, args: string[], ctx: CommandContext): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    ctx.write(command.help);
    return 0;
  }
  try {
    return await command.run(args, ctx);
  } catch (thrown) {
    const err = withStatus(thrown);
    ctx.progress.clear();
    const name = `netagentctl ${command.name}`;
    // Messages may quote the guest (an agent's status) or the user's input: one line, escaped.
    const say = (text: string) => process.stderr.write(`${name}: ${escapeControls(text)}\n`);
    if (err instanceof UsageError) {
      process.stderr.write(`${name}: ${usageText(err)}`);
      process.stderr.write(`(see \`netagentctl ${command.name} --help\`)\n`);
      return 2;
    }
    if (err instanceof ExitError) {
      say(err.message);
      return err.exitCode;
    }
    if (err instanceof TtrpcError) {
      say(`${codeName(err.code)}: ${err.message}`);
      return 1;
    }
    say(err instanceof Error ? err.message : String(err));
    return 1;
  }
}

/** An error's printable form, with the status code name for agent errors. */
export function describeError(thrown: unknown): string {
  const err = withStatus(thrown);
  if (err instanceof TtrpcError) return `${codeName(err.code)}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
