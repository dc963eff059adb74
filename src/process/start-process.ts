/**
 * The one place a process is started (Bun.spawn), with the argv,
 * namespace and environment of command.ts, and counted (started.ts).
 * One-shot runs (run-process.ts) are built on it; long-lived children use
 * it directly: the resident `ip -batch -` (src/net/iproute/ip-resident.ts), the
 * pod monitors (src/host/watch/pod-monitor.ts), `pidwait`
 * (src/host/watch/netns-gone.ts), QEMU (src/host/vm/vm.ts). The owner keeps the
 * handle, decides when it has done its work and kills it by its PID.
 */
import { Readable, Writable } from "node:stream";
import type { FileSink } from "bun";
import { type Command, commandArgv, spawnEnv } from "./command";
import { noteStarted } from "./started";

type Pipe = "pipe" | "ignore";
/** A pipe, nothing, or bytes the runtime writes while the child runs. */
type In = Pipe | Uint8Array;
/** A pipe, nothing, or a file the child writes to. */
type Out = Pipe | { file: string };

export interface StartOptions<I extends In, O extends Out, E extends Pipe> extends Command {
  stdin: I;
  stdout: O;
  stderr: E;
}

/** How a child ended: its exit status (128+N for signal N) and the signal if one ended it. */
interface ChildExit {
  code: number;
  signal: NodeJS.Signals | null;
}

/** A running child and its pipes (those asked for). */
export interface Child<I extends In, O extends Out, E extends Pipe> {
  readonly pid: number;
  readonly stdin: I extends "pipe" ? FileSink : undefined;
  readonly stdout: O extends "pipe" ? ReadableStream<Uint8Array> : undefined;
  readonly stderr: E extends "pipe" ? ReadableStream<Uint8Array> : undefined;
  /** Settles once the child has ended and been reaped. */
  readonly exited: Promise<ChildExit>;
  /** Not known to have ended (the runtime learns of a death a little later than the kernel). */
  readonly running: boolean;
  /** Sends `signal` (default SIGTERM) by PID; nothing once it has ended. */
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Starts `options.argv`. Throws when the program cannot be executed
 * (missing, not executable), with the runtime's words (ENOENT ...).
 */
export function startProcess<I extends In, O extends Out, E extends Pipe>(
  options: StartOptions<I, O, E>,
): Child<I, O, E> {
  const { stdout } = options;
  const proc = Bun.spawn(commandArgv(options), {
    stdin: options.stdin,
    stdout: typeof stdout === "string" ? stdout : Bun.file(stdout.file),
    stderr: options.stderr,
    env: spawnEnv(options),
  });
  const ended = noteStarted(options.argv[0] as string);
  proc.exited.then(ended, ended);
  const exited = proc.exited.then((code) => ({
    code,
    signal: proc.signalCode as NodeJS.Signals | null,
  }));
  return {
    pid: proc.pid,
    stdin: (options.stdin === "pipe" ? proc.stdin : undefined) as Child<I, O, E>["stdin"],
    stdout: (stdout === "pipe" ? proc.stdout : undefined) as Child<I, O, E>["stdout"],
    stderr: (options.stderr === "pipe" ? proc.stderr : undefined) as Child<I, O, E>["stderr"],
    exited,
    get running() {
      return proc.exitCode === null && proc.signalCode === null;
    },
    kill(signal: NodeJS.Signals = "SIGTERM") {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    },
  };
}

/**
 * A child's pipes as Node streams, for code written against them (the
 * guest console). Writes after the child is gone fail quietly: its exit
 * says why.
 */
export function nodeStreams(child: Child<"pipe", "pipe", "pipe">): {
  stdin: Writable;
  stdout: Readable;
  stderr: Readable;
} {
  const sink = child.stdin;
  const stdin = new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        sink.write(chunk);
        const flushed = sink.flush();
        if (flushed instanceof Promise) flushed.catch(() => {});
        done();
      } catch (err) {
        done(err as Error);
      }
    },
    final(done) {
      try {
        const ended = sink.end();
        if (ended instanceof Promise) ended.catch(() => {});
      } catch {
        // Already gone.
      }
      done();
    },
  });
  stdin.on("error", () => {}); // EPIPE once the child is gone.
  return {
    stdin,
    stdout: Readable.fromWeb(child.stdout as import("node:stream/web").ReadableStream),
    stderr: Readable.fromWeb(child.stderr as import("node:stream/web").ReadableStream),
  };
}
