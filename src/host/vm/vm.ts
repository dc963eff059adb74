/**
 * Boots the guest image under QEMU and hands back what drives it: the
 * agent's address, the serial console, and a stop() that always leaves no
 * QEMU behind. The accelerator is chosen by what works (see accel.ts): with
 * `auto`, a KVM guest that stays silent after the firmware hands over, or a
 * QEMU that dies under KVM, is replaced by a TCG one. The agent channel is
 * vhost-vsock when /dev/vhost-vsock exists, else virtio-serial on a unix
 * socket. Every QEMU started here is killed by its PID when this process
 * exits, whatever way it exits.
 */
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { AgentClient } from "../../client/client";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/health_pb";
import { type Child, nodeStreams, startProcess } from "../../process/start-process";
import { Code, TtrpcError } from "../../ttrpc/codes";
import { type AccelMode, accelRequest, decideAccel, type KvmFacts } from "./accel";
import type { BootSpec } from "./boot-spec";
import { watchBoot } from "./boot-watchdog";
import { GUEST_ARCHES, type GuestArchName } from "./guest-arch";
import { GuestConsole } from "./guest-console";
import { type GuestConfig, hostAgentAddress, qemuArgs } from "./qemu-args";

export interface VmOptions {
  /**
   * How to boot the guest (a boot.json, see boot-spec.ts): kernel, initrd,
   * the image's cmdline words and QEMU arguments. kernel/initrd win over it.
   */
  boot?: BootSpec;
  /** The guest's architecture (default x86_64): QEMU binary, machine, image directory. */
  arch?: GuestArchName;
  /** Default GUEST/vmlinux (PVH) when there is one, else GUEST/vmlinuz (GUEST: the arch's dist/guest*). */
  kernel?: string;
  initrd?: string;
  /** MAC of the virtio-net NIC (default 52:54:00:12:34:56). */
  mac?: string;
  memoryMiB?: number;
  cpus?: number;
  startAgent?: boolean;
  debugConsole?: boolean;
  logLevel?: string;
  kernelMessages?: boolean;
  /** "auto" (default): vsock when /dev/vhost-vsock exists, else serial. */
  channel?: "auto" | "serial" | "vsock";
  extraCmdline?: string[];
  /** Copy of every console byte, e.g. to a log file or the terminal. */
  onConsole?: (chunk: string) => void;
  qemu?: string;
  /** auto (default: NETAGENT_ACCEL, else auto), kvm or tcg; see accel.ts. */
  accel?: AccelMode;
  /** The KVM probe (default: probeKvm of /dev/kvm); tests inject facts. */
  kvmProbe?: () => KvmFacts | Promise<KvmFacts>;
  /** How long a KVM guest may stay silent after the firmware hands over (10 s). */
  bootWatchdogMs?: number;
  /** One line each: the accelerator chosen and why, and a fallback to TCG. */
  onNote?: (line: string) => void;
}

/** The accelerator a Vm runs under, and the one-line reason. */
export interface Accel {
  kvm: boolean;
  why: string;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

type Qemu = Child<"pipe", "pipe", "pipe">;

const live = new Set<Qemu>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort when the host process ends without stop(): kill by PID.
  process.on("exit", () => {
    for (const child of live) child.kill("SIGKILL");
  });
}

function usable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK | constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

export class Vm {
  /** performance.now() just before QEMU was spawned. */
  readonly startedAt: number;
  readonly console: GuestConsole;
  /** Resolves once QEMU has exited and been reaped. */
  readonly exited: Promise<Exit>;
  private exit: Exit | undefined;

  private constructor(
    private readonly child: Qemu,
    readonly config: GuestConfig,
    readonly dir: string,
    /** The accelerator this QEMU runs under and why it was chosen. */
    readonly accel: Accel,
    startedAt: number,
    onConsole?: (chunk: string) => void,
  ) {
    this.startedAt = startedAt;
    const { stdin, stdout, stderr } = nodeStreams(child);
    this.console = new GuestConsole(stdin, stdout, onConsole);
    let errText = "";
    stderr.setEncoding("utf8");
    stderr.on("data", (chunk: string) => {
      errText += chunk;
    });
    const errDone = new Promise<void>((resolve) => stderr.once("close", resolve));
    this.exited = new Promise<Exit>((resolve) => {
      child.exited.then(async ({ code, signal }) => {
        live.delete(child);
        this.exit = { code: signal === null ? code : null, signal };
        // QEMU's last words may still be in the pipe when its exit is known.
        await Promise.race([errDone, delay(1000)]);
        // QEMU's warnings (e.g. "hub 0 is not connected") would hide its error.
        const lines = errText.split("\n").filter((l) => l.trim());
        const errors = lines.filter((l) => !/: warning: /.test(l));
        const said = (errors.length ? errors : lines).join("\n");
        const why = said ? `: ${said}` : "";
        this.console.close(new Error(`qemu exited (${signal ?? `code ${code}`})${why}`));
        resolve(this.exit);
      });
    });
  }

  /**
   * Chooses the accelerator, spawns QEMU and, for KVM, waits until the
   * guest's own first words on the console (about a second); for TCG it
   * resolves at once. Under `auto` a silent or dead KVM guest is stopped
   * and replaced by a TCG one; under `kvm` that throws, saying what was
   * seen. Use waitForAgent to wait for the agent.
   */
  static async start(options: VmOptions = {}): Promise<Vm> {
    const note = options.onNote ?? (() => {});
    const request = accelRequest(options.accel);
    const choice = await decideAccel(
      request,
      options.kvmProbe,
      GUEST_ARCHES[options.arch ?? "x86_64"],
    );
    note(`acceleration: ${choice.kvm ? "KVM" : "TCG"} (${choice.why})`);
    const vm = await Vm.spawn(options, { kvm: choice.kvm, why: choice.why });
    if (!choice.watchdog) return vm;
    const seen = await watchBoot(vm.console, options.bootWatchdogMs ?? 10_000);
    if (!seen) return vm;
    await vm.stop(0);
    if (request.mode === "kvm") {
      throw new Error(`KVM (${request.from} kvm, no fallback): ${seen}`);
    }
    note(`KVM guest given up: ${seen}; starting again under TCG`);
    return Vm.spawn(options, { kvm: false, why: `auto: KVM tried and given up: ${seen}` });
  }

  /** Spawns one QEMU; resolves once the process runs. */
  private static async spawn(options: VmOptions, accel: Accel): Promise<Vm> {
    const arch = GUEST_ARCHES[options.arch ?? "x86_64"];
    const guest = arch.guestDir;
    // The uncompressed ELF boots by PVH, skipping the bzImage's decompression.
    const kernel = resolve(
      options.kernel ??
        options.boot?.kernel ??
        (existsSync(`${guest}/vmlinux`) ? `${guest}/vmlinux` : `${guest}/vmlinuz`),
    );
    const initrd = resolve(options.initrd ?? options.boot?.initrd ?? `${guest}/initrd.img`);
    const extraCmdline = [...(options.boot?.cmdline ?? []), ...(options.extraCmdline ?? [])];
    for (const f of [kernel, initrd]) {
      if (!existsSync(f)) throw new Error(`${f} missing: run npm run rootfs`);
    }
    const dir = mkdtempSync(join(tmpdir(), "netagent-vm-"));
    const wantVsock =
      options.channel === "vsock" ||
      ((options.channel ?? "auto") === "auto" && usable("/dev/vhost-vsock"));
    const config: GuestConfig = {
      ...(arch.name === "x86_64" ? {} : { arch: arch.name }),
      kernel,
      initrd,
      memoryMiB: options.memoryMiB ?? 512,
      cpus: options.cpus ?? 1,
      kvm: accel.kvm,
      mac: options.mac ?? "52:54:00:12:34:56",
      channel: wantVsock
        ? { kind: "vsock", cid: 3 + Math.floor(Math.random() * 0x7fff_0000) }
        : { kind: "serial", socket: join(dir, "agent.sock") },
      startAgent: options.startAgent ?? true,
      debugConsole: options.debugConsole ?? false,
      kernelMessages: options.kernelMessages ?? false,
      ...(options.logLevel ? { logLevel: options.logLevel } : {}),
      ...(extraCmdline.length > 0 ? { extraCmdline } : {}),
      ...(options.boot ? { extraQemu: options.boot.qemu } : {}),
    };
    const args = qemuArgs(config);
    installExitHook();
    const startedAt = performance.now();
    const qemu = options.qemu ?? arch.qemu;
    let child: Qemu;
    try {
      // QEMU runs in the user's own environment (their TMPDIR and the rest).
      child = startProcess({
        argv: [qemu, ...args],
        stdin: "pipe",
        stdout: "pipe",
        stderr: "pipe",
        env: "inherit",
      });
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`cannot start ${qemu}: ${(err as Error).message}`);
    }
    live.add(child);
    return new Vm(child, config, dir, accel, startedAt, options.onConsole);
  }

  get pid(): number {
    return this.child.pid;
  }

  /** Where a host client reaches the agent (unix:///… for the serial channel). */
  get agentAddress(): string {
    return hostAgentAddress(this.config);
  }

  /** Milliseconds since QEMU was spawned. */
  elapsed(): number {
    return performance.now() - this.startedAt;
  }

  /** Dials the agent, retrying while the channel's socket is not there yet. */
  async connect(timeoutMs = 10_000): Promise<AgentClient> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      try {
        return await AgentClient.connect(this.agentAddress, Math.max(1, deadline - now()));
      } catch (err) {
        if (this.exit) throw new Error(`qemu exited before the agent channel opened`);
        if (now() >= deadline) throw err;
        await delay(50);
      }
    }
  }

  /**
   * Calls Health/Check on `client` until one answers SERVING, each attempt
   * bounded by `attemptMs`, all by `timeoutMs`. A request sent before the
   * agent opened its port waits in the channel and is answered late; the
   * late answer to a timed-out attempt is dropped by stream id.
   */
  async waitForCheck(client: AgentClient, timeoutMs: number, attemptMs = 1000): Promise<void> {
    const deadline = now() + timeoutMs;
    let last: unknown;
    while (now() < deadline) {
      if (this.exit) throw new Error(`qemu exited while waiting for Check`);
      try {
        const r = await client.unary(
          Health.method.check,
          {},
          { timeoutMs: Math.max(1, Math.min(attemptMs, deadline - now())) },
        );
        if (r.status === HealthCheckResponse_ServingStatus.SERVING) return;
        last = new Error(`Check answered ${HealthCheckResponse_ServingStatus[r.status]}`);
      } catch (err) {
        last = err;
        if (!(err instanceof TtrpcError && err.code === Code.DEADLINE_EXCEEDED)) throw err;
      }
    }
    throw new Error(`no answer to Check within ${timeoutMs} ms (${String(last)})`);
  }

  /**
   * Waits until the agent answers Check over a fresh connection, then closes
   * it. Resolves with the milliseconds from QEMU start to that answer.
   */
  async waitForAgent(timeoutMs = 120_000): Promise<number> {
    const deadline = now() + timeoutMs;
    const client = await this.connect(timeoutMs);
    try {
      await this.waitForCheck(client, Math.max(1, deadline - now()));
      return this.elapsed();
    } catch (err) {
      throw new Error(`${(err as Error).message}; console:\n${this.console.tail()}`);
    } finally {
      client.close();
    }
  }

  /**
   * Stops the VM and reaps QEMU. With a debug console the guest is asked
   * to power off (init stops the agent cleanly) and gets `graceMs`; then
   * QEMU gets SIGTERM, and SIGKILL 3 s later. Never throws.
   */
  async stop(graceMs = 5000): Promise<Exit> {
    if (!this.exit && this.config.debugConsole) {
      try {
        this.console.type("\npoweroff\n");
        await Promise.race([this.exited, delay(graceMs)]);
      } catch {
        // Console already closed: QEMU is on its way out.
      }
    }
    for (const [signal, wait] of [
      ["SIGTERM", 3000],
      ["SIGKILL", 10_000],
    ] as const) {
      if (this.exit) break;
      try {
        process.kill(this.pid, signal);
      } catch {
        // Exited between the check and the kill.
      }
      await Promise.race([this.exited, delay(wait)]);
    }
    const exit = await this.exited;
    rmSync(this.dir, { recursive: true, force: true });
    return exit;
  }
}

const now = () => performance.now();
const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
