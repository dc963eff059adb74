/**
 * Drives a stand-in `ip` (or the real one) as the agent's resident session
 * does: `ip netns exec NS BIN -json -details -batch -` with pipes and only
 * PATH and LC_ALL, exchanges written with their end marker, one JSON
 * document awaited per show line while stdin stays open. For the
 * stand-ins' own tests (standins.test.ts).
 */
import { spawn } from "node:child_process";
import type { Netns } from "../../helpers/netns";
import { Child, type Exit } from "../../helpers/process";
import { waitFor } from "../../helpers/wait";

export const SESSION_ARGS = ["-json", "-details", "-batch", "-"];
const MARKER = "# netagent exchange";
const SHOW = /^[a-z]+( -[46])? (show|list)( |$)/;

export class IpSession {
  readonly child: Child;
  /** Settles once the process exited and its output was read to the end. */
  private readonly closed: Promise<Exit>;
  /** Lines written so far, markers included: what iproute2 numbers its failures by. */
  written = 0;

  constructor(ns: Netns, bin: string, args: readonly string[] = SESSION_ARGS) {
    const proc = spawn("ip", ["netns", "exec", ns.name, bin, ...args], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" },
    });
    proc.stdin?.on("error", () => {}); // the process may exit with input unread
    this.child = new Child(proc, `${bin} ${args.join(" ")}`);
    this.closed = new Promise((resolve) =>
      proc.once("close", (code, signal) => resolve({ code, signal })),
    );
  }

  /** `ip netns exec` execs the binary: this is the stand-in's own PID. */
  get pid(): number {
    return this.child.pid;
  }

  /** Complete JSON documents on stdout so far (one per show line). */
  docs(): unknown[] {
    const lines = this.child.stdout.split("\n");
    return lines.slice(0, -1).map((l) => JSON.parse(l) as unknown);
  }

  /** Writes `lines` and the marker, stdin left open. */
  send(lines: readonly string[]): void {
    this.child.proc.stdin?.write(`${[...lines, MARKER].join("\n")}\n`);
    this.written += lines.length + 1;
  }

  /**
   * One exchange: its documents (one per show line), awaited with stdin
   * still open; fails if the process exits first.
   */
  async exchange(lines: readonly string[], timeoutMs = 20_000): Promise<unknown[]> {
    const from = this.docs().length;
    const want = lines.filter((l) => SHOW.test(l)).length;
    this.send(lines);
    const done = await waitFor(
      () => (!this.child.running ? "exited" : this.docs().length >= from + want && "answered"),
      { timeoutMs, what: `${want} documents for ${JSON.stringify(lines)}` },
    );
    if (done === "exited") {
      throw new Error(`exited ${JSON.stringify(this.child.exit)}: ${this.child.stderr}`);
    }
    return this.docs().slice(from);
  }

  /** An exchange that ends the process (a failed line, a death): how it exited. */
  async lastExchange(lines: readonly string[]): Promise<Exit> {
    this.send(lines);
    return this.closed;
  }

  /** Closes stdin (the agent stopping the session) and waits for the exit. */
  close(): Promise<Exit> {
    this.child.proc.stdin?.end();
    return this.closed;
  }
}

/** A one-shot run: `input` written whole and closed (undefined: no stdin at all). */
export async function oneShot(
  ns: Netns,
  bin: string,
  args: readonly string[],
  input?: string,
): Promise<Exit & { stdout: string; stderr: string }> {
  const proc = spawn("ip", ["netns", "exec", ns.name, bin, ...args], {
    stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" },
  });
  proc.stdin?.on("error", () => {});
  proc.stdin?.end(input);
  const child = new Child(proc, `${bin} ${args.join(" ")}`);
  const exit = await new Promise<Exit>((resolve) =>
    proc.once("close", (code, signal) => resolve({ code, signal })),
  );
  return { ...exit, stdout: child.stdout, stderr: child.stderr };
}
