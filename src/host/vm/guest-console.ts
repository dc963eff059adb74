/**
 * The guest's serial console, driven from the host: a transcript of every
 * byte QEMU wrote, waiting for text with a deadline, and running a shell
 * command through the debug shell with its output cut out between markers.
 */
import type { Readable, Writable } from "node:stream";

export interface Marked {
  status: number;
  /** The command's output lines, without carriage returns. */
  lines: string[];
}

/**
 * The shell line that runs `command` between markers `@@B<id>` and
 * `@@E<id> <status>`. The markers are printed with printf so the echo of
 * the typed line itself never contains them.
 */
export function markedCommand(command: string, id: number): string {
  if (/[\r\n]/.test(command)) throw new Error("console command must be one line");
  return `printf '@@%s\\n' B${id}; ${command}; printf '\\n@@%s %s\\n' E${id} $?`;
}

/**
 * Cuts the output of command `id` out of a console transcript, or returns
 * undefined while its end marker has not arrived. Tolerates `\r\n`.
 */
export function extractMarked(transcript: string, id: number): Marked | undefined {
  const lines = transcript.replaceAll("\r", "").split("\n");
  const begin = lines.indexOf(`@@B${id}`);
  if (begin < 0) return undefined;
  const endRe = new RegExp(`^@@E${id} (\\d+)$`);
  for (let i = begin + 1; i < lines.length; i++) {
    const m = endRe.exec(lines[i] as string);
    if (!m) continue;
    const out = lines.slice(begin + 1, i);
    // The end marker starts with a newline so output without one still ends cleanly.
    if (out.at(-1) === "") out.pop();
    return { status: Number(m[1]), lines: out };
  }
  return undefined;
}

interface Waiter {
  test: (text: string) => boolean;
  resolve: () => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class GuestConsole {
  private text = "";
  private readonly waiters = new Set<Waiter>();
  private closedWith: Error | undefined;
  private nextId = 1;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly input: Writable,
    output: Readable,
    onData?: (chunk: string) => void,
  ) {
    output.setEncoding("utf8");
    output.on("data", (chunk: string) => {
      this.text += chunk;
      onData?.(chunk);
      for (const w of this.waiters) if (w.test(this.text)) w.resolve();
    });
  }

  /** Everything the guest wrote to its console so far. */
  get transcript(): string {
    return this.text;
  }

  /** The last `n` lines of the transcript, for error messages. */
  tail(n = 30): string {
    return this.text.replaceAll("\r", "").split("\n").slice(-n).join("\n");
  }

  /** Fails every wait from now on, e.g. because QEMU exited. */
  close(reason: Error): void {
    this.closedWith ??= reason;
    for (const w of this.waiters) w.reject(reason);
  }

  /** Sends raw bytes to the console. */
  type(text: string): void {
    if (this.closedWith) throw this.closedWith;
    this.input.write(text);
  }

  /**
   * Resolves when the transcript from offset `from` matches `pattern`;
   * rejects after `timeoutMs` or when the console closes.
   */
  waitFor(pattern: string | RegExp, timeoutMs: number, from = 0): Promise<void> {
    const test = (text: string) => {
      const rest = text.slice(from);
      return typeof pattern === "string" ? rest.includes(pattern) : pattern.test(rest);
    };
    return this.waitUntil(test, timeoutMs, `console output ${String(pattern)}`);
  }

  private waitUntil(test: (text: string) => boolean, timeoutMs: number, what: string) {
    if (test(this.text)) return Promise.resolve();
    if (this.closedWith) return Promise.reject(this.closedWith);
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        test,
        resolve: () => {
          this.waiters.delete(w);
          clearTimeout(w.timer);
          resolve();
        },
        reject: (err) => {
          this.waiters.delete(w);
          clearTimeout(w.timer);
          reject(err);
        },
        timer: setTimeout(
          () => w.reject(new Error(`no ${what} within ${timeoutMs} ms; console:\n${this.tail()}`)),
          timeoutMs,
        ),
      };
      this.waiters.add(w);
    });
  }

  /**
   * Runs one shell command in the debug shell and resolves with its exit
   * status and output lines. Commands run one at a time, in call order.
   */
  run(command: string, timeoutMs = 10_000): Promise<Marked> {
    const id = this.nextId++;
    const next = this.queue.then(async () => {
      const from = this.text.length;
      this.type(`${markedCommand(command, id)}\n`);
      let result: Marked | undefined;
      await this.waitUntil(
        (text) => {
          result = extractMarked(text.slice(from), id);
          return result !== undefined;
        },
        timeoutMs,
        `end of ${JSON.stringify(command)}`,
      );
      return result as Marked;
    });
    this.queue = next.catch(() => {});
    return next;
  }

  /** Runs `command` and parses the one line of its output that is JSON. */
  async runJson<T = unknown>(command: string, timeoutMs = 10_000): Promise<T> {
    const { status, lines } = await this.run(command, timeoutMs);
    if (status !== 0) throw new Error(`${command}: exit ${status}: ${lines.join("\n")}`);
    for (const line of lines) {
      const t = line.trim();
      if (!t.startsWith("[") && !t.startsWith("{")) continue;
      try {
        return JSON.parse(t) as T;
      } catch {
        // A kernel message can land inside a line; a later line may be whole.
      }
    }
    throw new Error(`${command}: no JSON in output:\n${lines.join("\n")}`);
  }
}
