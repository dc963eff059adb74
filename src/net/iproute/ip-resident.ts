/**
 * One resident `ip [-6] -json -details -batch -` process and what has come out
 * of it: the pipes, standard output split into one-line JSON documents,
 * standard error kept, the lines written so far (iproute2 numbers lines
 * across exchanges) and what its link name cache is judged by. The session
 * (ip-session.ts) decides what to send and when to trust it.
 */
import { readFileSync } from "node:fs";
import { type Child, startProcess } from "../../process/start-process";
import { abortedError, NetError } from "../model/net-error";
import { NameCacheWatch } from "./ip-name-cache";

/** What one exchange (or one-shot run) left: the same shape for both. */
export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  /** Set when ip did not run to its end: killed by the runner, or never started. */
  killed?: NetError;
}

/** The comment line that ends an exchange (stand-ins in tests split on it). */
const EXCHANGE_END = "# netagent exchange";

/**
 * An ip run or exchange past its own time limit: unavailable, as every
 * tool past its own limit (src/process/run-process.ts says why).
 */
export function killedAfter(ms: number): NetError {
  return new NetError("unavailable", `killed (SIGKILL) after ${ms} ms without finishing`);
}

/** What a cancelled call's ip fails with: aborted, the signal's reason as its cause. */
export const cancelled = abortedError;

/** One running process and what has come out of it. */
export class Resident {
  readonly proc: Child<"pipe", "pipe", "pipe">;
  private readonly reader: { read(): Promise<{ value?: Uint8Array; done: boolean }> };
  private readonly decoder = new TextDecoder();
  /** Complete lines of standard output not yet taken, and the line still coming. */
  private readonly lines: string[] = [];
  private partial = "";
  private ended = false;
  /** All of standard error so far. */
  err = "";
  readonly errDone: Promise<void>;
  /** Lines written so far: iproute2's line numbers continue across exchanges. */
  sent = 0;
  /** Judges the process's link name cache from the listings it printed. */
  readonly names = new NameCacheWatch();
  /** The last exchange ended with a link listing, nothing changed after it. */
  listedLast = false;
  /** When that listing was read (performance.now()). */
  listedAt = 0;
  killed: NetError | undefined;

  /** `ipv6`: run as `ip -6` (listings of IPv6 rules, routes, neighbours, nexthop objects). */
  constructor(binary: string, ipv6 = false) {
    const proc = startProcess({
      argv: [binary, ...(ipv6 ? ["-6"] : []), "-json", "-details", "-batch", "-"],
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    this.proc = proc;
    this.reader = proc.stdout.getReader() as unknown as Resident["reader"];
    this.errDone = (async () => {
      const errDecoder = new TextDecoder();
      for await (const chunk of proc.stderr) {
        this.err += errDecoder.decode(chunk, { stream: true });
      }
    })().catch(() => {});
  }

  /**
   * Neither ended nor killed by us, nor dead by anyone else's hand: the
   * runtime learns of a child's death only later, so the kernel is asked
   * (a dead child is a zombie, or gone, in /proc).
   */
  get alive(): boolean {
    if (this.ended || this.killed !== undefined || !this.proc.running) return false;
    try {
      const stat = readFileSync(`/proc/${this.proc.pid}/stat`, "latin1");
      return stat[stat.lastIndexOf(")") + 2] !== "Z";
    } catch {
      return false;
    }
  }

  kill(why: NetError): void {
    this.killed ??= why;
    this.proc.kill("SIGKILL");
  }

  /** Writes lines and the end marker; false when the process is gone. */
  write(lines: readonly string[]): boolean {
    try {
      this.proc.stdin.write(`${lines.join("\n")}\n${EXCHANGE_END}\n`);
      // A process that died meanwhile fails the flush (EPIPE): its output's end tells.
      const flushed = this.proc.stdin.flush();
      if (flushed instanceof Promise) flushed.catch(() => {});
      this.sent += lines.length + 1;
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The next `n` documents; fewer when the output ended first. Each chunk
   * is searched once (iproute2 flushes every route: a 512-route listing
   * comes in ~500 chunks, and searching the growing text again each time
   * would cost its square).
   */
  async take(n: number): Promise<string[]> {
    while (this.lines.length < n && !this.ended) {
      const { value, done } = await this.reader
        .read()
        .catch(() => ({ value: undefined, done: true }));
      if (done || value === undefined) {
        this.ended = true;
        this.partial += this.decoder.decode();
        break;
      }
      const text = this.decoder.decode(value, { stream: true });
      let start = 0;
      for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
        this.lines.push(this.partial + text.slice(start, nl));
        this.partial = "";
        start = nl + 1;
      }
      this.partial += text.slice(start);
    }
    return this.lines.splice(0, n);
  }

  /** Output nobody asked for: the process and the agent no longer agree on the exchange. */
  get leftover(): boolean {
    return this.lines.length > 0 || this.partial.length > 0;
  }

  close(): void {
    try {
      this.proc.stdin.end();
    } catch {
      // Already gone.
    }
  }
}
