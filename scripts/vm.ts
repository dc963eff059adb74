/**
 * `npm run vm -- [options]`: boots dist/guest (or, with --arch arm64,
 * dist/guest-arm64 under qemu-system-aarch64) under QEMU, prints the
 * address to drive the agent at, waits until Check answers, and keeps the
 * VM up until ^C / SIGTERM (or, with --console, ^] typed in the console).
 * With --ready-file, the time of QEMU's start and of the first Check go to
 * a file once Check answers (the demo's pod-network-ready figure).
 * Exit codes: 0 clean stop, 1 the guest did not come up, 2 usage.
 */
import { createWriteStream, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAccelMode } from "../src/host/vm/accel";
import { bootJsonPath, loadBootSpec } from "../src/host/vm/boot-spec";
import { GUEST_ARCHES, parseGuestArch } from "../src/host/vm/guest-arch";
import { Vm, type VmOptions } from "../src/host/vm/vm";

const USAGE = `usage: npm run vm -- [options]

  --arch ARCH        x86_64 (default: dist/guest) or arm64 (dist/guest-arm64,
                     qemu-system-aarch64 -M virt; TCG unless the host is arm64
                     with a working KVM)
  --mac MAC          MAC of the virtio-net NIC (default 52:54:00:12:34:56)
  --memory MIB       guest memory (default 512)
  --cpus N           guest CPUs (default 1)
  --accel auto|kvm|tcg  accelerator (default NETAGENT_ACCEL, else auto: KVM
                     only when /dev/kvm opens, KVM_CREATE_VM works and the
                     CPU has vmx/svm, and a KVM guest silent after the
                     firmware hands over is restarted under TCG; kvm never
                     falls back)
  --debug-console    root shell on the serial console (agent.debug_console)
  --console          attach this terminal to the serial console (^] stops the VM)
  --no-agent         boot without starting netagent (init.noagent)
  --log-level LEVEL  agent.log=LEVEL
  --kernel-messages  do not boot with quiet
  --timeout S        how long to wait for Check (default 180)
  --console-log PATH where the serial console goes without --console
                     (default: a netagent-vm-PID.console.log in the temp dir)
  --ready-file PATH  once Check answers, write "START_MS CHECK_MS" there:
                     QEMU's start in ms since the epoch, and the ms from it
                     to the first answered Check (written whole, by rename)
  --mode MODE        image (the default: read-only root image mapped with
                     DAX, dist/guest/boot-image.json; on arm64 on virtio-blk,
                     without DAX) or initramfs (everything in the initramfs,
                     boot-initramfs.json); without --mode, the arch's
                     boot.json (image mode unless built with
                     npm run rootfs -- --default initramfs)
  --boot FILE        another boot.json
  --kernel PATH, --initrd PATH   override the boot.json's kernel / initrd
`;

function parse(argv: string[]) {
  const options: VmOptions = {};
  let attach = false;
  let timeoutS = 180;
  let bootFile: string | undefined;
  let readyFile: string | undefined;
  let consoleLog: string | undefined;
  let mode: "image" | "initramfs" | undefined;
  let arch = GUEST_ARCHES.x86_64;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === "--help" || a === "-h") return "help" as const;
    else if (a === "--mac") options.mac = value();
    else if (a === "--memory") options.memoryMiB = Number(value());
    else if (a === "--cpus") options.cpus = Number(value());
    else if (a === "--accel") options.accel = parseAccelMode(value(), "--accel").mode;
    else if (a === "--debug-console") options.debugConsole = true;
    else if (a === "--console") attach = true;
    else if (a === "--no-agent") options.startAgent = false;
    else if (a === "--log-level") options.logLevel = value();
    else if (a === "--kernel-messages") options.kernelMessages = true;
    else if (a === "--timeout") timeoutS = Number(value());
    else if (a === "--ready-file") readyFile = value();
    else if (a === "--console-log") consoleLog = value();
    else if (a === "--kernel") options.kernel = value();
    else if (a === "--initrd") options.initrd = value();
    else if (a === "--boot") bootFile = value();
    else if (a === "--arch") arch = parseGuestArch(value());
    else if (a === "--mode") {
      const m = value();
      if (m !== "image" && m !== "initramfs") {
        throw new Error(`--mode: expected image or initramfs, got ${JSON.stringify(m)}`);
      }
      mode = m;
    } else throw new Error(`unknown argument ${JSON.stringify(a)}`);
  }
  if (!(timeoutS > 0)) throw new Error("--timeout: expected seconds > 0");
  if (arch.name !== "x86_64") options.arch = arch.name;
  bootFile ??= bootJsonPath(mode, arch.guestDir);
  return { options, attach, timeoutS, bootFile, readyFile, consoleLog };
}

async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    process.stderr.write(`vm: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  const { options, attach, timeoutS, bootFile, readyFile, consoleLog } = parsed;
  try {
    options.boot = loadBootSpec(bootFile);
  } catch (err) {
    process.stderr.write(`vm: ${(err as Error).message}\n`);
    return 1;
  }
  // Opened before the start: a KVM attempt given up by the watchdog is logged too.
  const logPath = consoleLog ?? join(tmpdir(), `netagent-vm-${process.pid}.console.log`);
  const log = attach ? undefined : createWriteStream(logPath);
  options.onConsole = (chunk) => (attach ? process.stdout.write(chunk) : log?.write(chunk));
  const say = (line: string) => process.stderr.write(`vm: ${line}\n`);
  options.onNote = say;
  const vm = await Vm.start(options);
  say(
    `qemu pid ${vm.pid} (${vm.config.arch ?? "x86_64"}, ${vm.config.kvm ? "KVM" : "TCG -cpu max"}), MAC ${vm.config.mac}`,
  );
  say(`agent: ${vm.agentAddress}`);
  say(
    `boot: ${options.boot?.source} (${options.boot?.image ? `root image ${options.boot.image}` : "initramfs"})`,
  );
  if (!attach) say(`console log: ${logPath}`);

  let stopping: Promise<number> | undefined;
  const stop = (why: string, code: number) => {
    stopping ??= (async () => {
      say(`${why}: stopping the VM`);
      const exit = await vm.stop();
      say(`qemu exited (${exit.signal ?? `code ${exit.code}`})`);
      if (process.stdin.isTTY) process.stdin.setRawMode(false);
      process.stdin.pause();
      return code;
    })();
    return stopping;
  };
  process.on("SIGINT", () => void stop("SIGINT", 0));
  process.on("SIGTERM", () => void stop("SIGTERM", 0));
  if (attach) {
    if (process.stdin.isTTY) process.stdin.setRawMode(true);
    process.stdin.on("data", (buf: Buffer) => {
      if (buf.includes(0x1d)) void stop("^]", 0);
      else vm.console.type(buf.toString("latin1"));
    });
  }

  try {
    if (options.startAgent === false) {
      say("no agent (init.noagent)");
    } else {
      const ms = await vm.waitForAgent(timeoutS * 1000);
      say(`Check answered ${(ms / 1000).toFixed(2)} s after QEMU start`);
      if (readyFile) {
        const startMs = Math.round(Date.now() - vm.elapsed());
        writeFileSync(`${readyFile}.tmp`, `${startMs} ${Math.round(ms)}\n`);
        renameSync(`${readyFile}.tmp`, readyFile);
      }
      say(`drive it: dist/netagentctl --addr ${vm.agentAddress} check`);
    }
  } catch (err) {
    say(`guest not up: ${(err as Error).message}`);
    return stop("failure", 1);
  }
  const exit = await vm.exited;
  if (stopping) return stopping;
  say(`qemu exited on its own (${exit.signal ?? `code ${exit.code}`})`);
  await vm.stop();
  return exit.code === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`vm: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
