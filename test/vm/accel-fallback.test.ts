/**
 * The boot watchdog with fake QEMUs (shell scripts that log each run's PID
 * and accelerator): under auto, a KVM guest that stays silent after the
 * firmware's hand-over, or a QEMU that dies under KVM, is replaced by a TCG
 * one and the first QEMU is gone; an explicit kvm never falls back; a KVM
 * guest that speaks is kept; a host without /dev/kvm gets TCG at once.
 * Each fake says "fake qemu: ACCEL" before anything else, after logging its
 * run, so a test waits for that before reading the log.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type KvmFacts, probeKvm } from "../../src/host/vm/accel";
import { Vm, type VmOptions } from "../../src/host/vm/vm";
import { pidAlive } from "../helpers/process";

const dir = mkdtempSync(join(tmpdir(), "netagent-fakeqemu-accel-"));
const kernel = join(dir, "vmlinuz");
const initrd = join(dir, "initrd.img");
writeFileSync(kernel, "");
writeFileSync(initrd, "");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WORKING_KVM: KvmFacts = { device: "/dev/kvm", createVm: "ok", cpuFlag: "vmx" };
const FIRMWARE = "printf 'SeaBIOS (version 1.16.2-debian-1.16.2-1)\\r\\n\\n\\nBooting from ROM..'";
const GUEST = "printf 'init: netagent started (pid 80, run 1)\\r\\n'";

let fakes = 0;
/** A fake QEMU running `kvmBody` under `-accel kvm` and `tcgBody` otherwise; runs logged. */
// not a wait: stand-ins for QEMU that never end (killed by the runner) in these cases
function fakeQemu(kvmBody: string, tcgBody = `${FIRMWARE}; ${GUEST}; exec sleep 600`) {
  const name = `qemu-${++fakes}`;
  const path = join(dir, name);
  const runs = join(dir, `${name}.runs`);
  writeFileSync(
    path,
    `#!/bin/sh
case " $* " in *" -accel kvm "*) accel=kvm ;; *) accel=tcg ;; esac
echo "$$ $accel" >>'${runs}'
echo "fake qemu: $accel"
if [ $accel = kvm ]; then ${kvmBody}; else ${tcgBody}; fi
`,
  );
  chmodSync(path, 0o755);
  return {
    qemu: path,
    runs: () =>
      existsSync(runs)
        ? readFileSync(runs, "utf8")
            .trim()
            .split("\n")
            .map((l) => {
              const [pid, accel] = l.split(" ");
              return { pid: Number(pid), accel };
            })
        : [],
  };
}

async function start(options: VmOptions) {
  const notes: string[] = [];
  const vm = await Vm.start({ kernel, initrd, onNote: (l) => notes.push(l), ...options });
  return { vm, notes };
}

describe("boot watchdog and fallback to TCG", () => {
  it("auto: a KVM guest silent after the hand-over is stopped and replaced by a TCG one", async () => {
    // not a wait: a stand-in for a QEMU that never ends, killed by the runner
    const fake = fakeQemu(`${FIRMWARE}; exec sleep 600`);
    const { vm, notes } = await start({
      qemu: fake.qemu,
      kvmProbe: () => WORKING_KVM,
      bootWatchdogMs: 1000,
    });
    try {
      await vm.console.waitFor("fake qemu: tcg", 10_000);
      const runs = fake.runs();
      expect(runs.map((r) => r.accel)).toEqual(["kvm", "tcg"]);
      expect(pidAlive(runs[0]?.pid as number)).toBe(false);
      expect(vm.pid).toBe(runs[1]?.pid);
      expect(vm.config.kvm).toBe(false);
      expect(notes).toHaveLength(2);
      expect(notes[0]).toMatch(/^acceleration: KVM \(auto \(default\): .*CPU has vmx\)$/);
      expect(notes[1]).toBe(
        "KVM guest given up: nothing on the console 1.0 s after the firmware handed over " +
          '(last console line: "Booting from ROM.."); starting again under TCG',
      );
      expect(vm.accel.why).toMatch(/^auto: KVM tried and given up: nothing on the console/);
      await vm.console.waitFor("init: netagent started", 10_000);
    } finally {
      await vm.stop(0);
    }
  }, 30_000);

  it("auto: a QEMU that dies under KVM is replaced by a TCG one, and its error is the reason", async () => {
    const fake = fakeQemu(
      "echo 'qemu-system-x86_64: warning: hub 0 is not connected to host network' >&2; " +
        "echo 'qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69' >&2; exit 1",
    );
    const { vm, notes } = await start({ qemu: fake.qemu, kvmProbe: () => WORKING_KVM });
    try {
      await vm.console.waitFor("fake qemu: tcg", 10_000);
      expect(fake.runs().map((r) => r.accel)).toEqual(["kvm", "tcg"]);
      expect(vm.config.kvm).toBe(false);
      expect(notes[1]).toBe(
        "KVM guest given up: qemu exited (code 1): qemu-system-x86_64: error: failed to set " +
          "MSR 0x10a to 0x69; starting again under TCG",
      );
    } finally {
      await vm.stop(0);
    }
  }, 30_000);

  it("kvm: a silent guest fails the start, saying what was seen, and leaves no QEMU", async () => {
    // not a wait: a stand-in for a QEMU that never ends, killed by the runner
    const fake = fakeQemu(`${FIRMWARE}; exec sleep 600`);
    await expect(
      start({ qemu: fake.qemu, accel: "kvm", kvmProbe: () => WORKING_KVM, bootWatchdogMs: 500 }),
    ).rejects.toThrow(
      "KVM (--accel kvm, no fallback): nothing on the console 0.5 s after the firmware handed " +
        'over (last console line: "Booting from ROM..")',
    );
    const runs = fake.runs();
    expect(runs.map((r) => r.accel)).toEqual(["kvm"]);
    expect(pidAlive(runs[0]?.pid as number)).toBe(false);
  }, 30_000);

  it("kvm: a QEMU dying under KVM fails the start with its error", async () => {
    const fake = fakeQemu("echo 'qemu-system-x86_64: failed to initialize kvm: EPERM' >&2; exit 1");
    await expect(
      start({ qemu: fake.qemu, accel: "kvm", kvmProbe: () => WORKING_KVM }),
    ).rejects.toThrow(/no fallback\): qemu exited \(code 1\): .*failed to initialize kvm: EPERM/);
    expect(fake.runs().map((r) => r.accel)).toEqual(["kvm"]);
  }, 30_000);

  it("kvm: a device that does not open fails before any QEMU runs", async () => {
    // not a wait: a stand-in for a QEMU that never ends, killed by the runner
    const fake = fakeQemu(`${FIRMWARE}; ${GUEST}; exec sleep 600`);
    await expect(
      start({ qemu: fake.qemu, accel: "kvm", kvmProbe: () => probeKvm(join(dir, "no-kvm")) }),
    ).rejects.toThrow(/--accel kvm: cannot use KVM: .*no-kvm does not open \(ENOENT\)/);
    expect(fake.runs()).toEqual([]);
  });
});

describe("boot watchdog and fallback to TCG: a guest that speaks, no /dev/kvm, NETAGENT_ACCEL", () => {
  it("auto: a KVM guest that speaks is kept", async () => {
    // not a wait: a stand-in for a QEMU that never ends, killed by the runner
    const fake = fakeQemu(`${FIRMWARE}; ${GUEST}; exec sleep 600`);
    const { vm, notes } = await start({
      qemu: fake.qemu,
      kvmProbe: () => WORKING_KVM,
      bootWatchdogMs: 20_000,
    });
    try {
      expect(fake.runs().map((r) => r.accel)).toEqual(["kvm"]);
      expect(vm.config.kvm).toBe(true);
      expect(notes).toHaveLength(1);
    } finally {
      await vm.stop(0);
    }
  }, 30_000);

  it("auto on a machine without /dev/kvm: TCG at once, no watchdog, the reason printed", async () => {
    // A TCG guest that never speaks: with no watchdog the start still resolves.
    // not a wait: a stand-in for a QEMU that never ends, killed by the runner
    const fake = fakeQemu("exit 1", "exec sleep 600");
    const { vm, notes } = await start({
      qemu: fake.qemu,
      kvmProbe: () => probeKvm(join(dir, "no-kvm")),
    });
    try {
      await vm.console.waitFor("fake qemu: tcg", 10_000);
      expect(fake.runs().map((r) => r.accel)).toEqual(["tcg"]);
      expect(notes).toEqual([
        `acceleration: TCG (auto (default): ${dir}/no-kvm does not open (ENOENT))`,
      ]);
    } finally {
      await vm.stop(0);
    }
  });

  it("NETAGENT_ACCEL=tcg is honoured without probing", async () => {
    // not a wait: a stand-in for a QEMU that never ends, killed by the runner
    const fake = fakeQemu("exit 1", "exec sleep 600");
    const before = process.env.NETAGENT_ACCEL;
    process.env.NETAGENT_ACCEL = "tcg";
    try {
      const { vm, notes } = await start({
        qemu: fake.qemu,
        kvmProbe: () => {
          throw new Error("probed");
        },
      });
      await vm.console.waitFor("fake qemu: tcg", 10_000);
      await vm.stop(0);
      expect(notes).toEqual(["acceleration: TCG (NETAGENT_ACCEL tcg)"]);
      expect(fake.runs().map((r) => r.accel)).toEqual(["tcg"]);
    } finally {
      if (before === undefined) delete process.env.NETAGENT_ACCEL;
      else process.env.NETAGENT_ACCEL = before;
    }
  });
});
