/**
 * The accelerator decision (table-driven over made-up facts), the CPU flag
 * reader, the request's sources, and the I/O probe against paths that are
 * not a working KVM: a missing device and /dev/null.
 */
import { describe, expect, it } from "vitest";
import {
  accelRequest,
  chooseAccel,
  cpuVirtFlag,
  decideAccel,
  type KvmFacts,
  parseAccelMode,
  probeKvm,
} from "../../src/host/vm/accel";
import { GUEST_ARCHES } from "../../src/host/vm/guest-arch";

const good: KvmFacts = { device: "/dev/kvm", createVm: "ok", cpuFlag: "vmx" };
const auto = { mode: "auto", from: "default" } as const;
const kvm = { mode: "kvm", from: "--accel" } as const;

describe("cpuVirtFlag", () => {
  it.each([
    ["flags\t\t: fpu vme de pse vmx sse2\nbugs\t\t: spectre_v1\n", "vmx"],
    ["processor\t: 0\nflags\t\t: fpu svm lm\n", "svm"],
    // Only whole words on the flags line count.
    ["flags\t\t: fpu vmxx avx512_vmx\nmodel name\t: vmx svm\n", ""],
    ["", ""],
  ])("reads %j", (cpuinfo, flag) => {
    expect(cpuVirtFlag(cpuinfo)).toBe(flag);
  });
});

describe("accelRequest", () => {
  it("takes the flag over NETAGENT_ACCEL over the default auto", () => {
    expect(accelRequest("kvm", "tcg")).toEqual({ mode: "kvm", from: "--accel" });
    expect(accelRequest(undefined, "tcg")).toEqual({ mode: "tcg", from: "NETAGENT_ACCEL" });
    expect(accelRequest(undefined, "")).toEqual({ mode: "auto", from: "default" });
    expect(accelRequest(undefined, undefined)).toEqual({ mode: "auto", from: "default" });
  });

  it("refuses anything but auto, kvm and tcg, naming the source and the value", () => {
    expect(() => accelRequest(undefined, "KVM")).toThrow(
      'NETAGENT_ACCEL: expected auto, kvm or tcg, got "KVM"',
    );
    expect(() => parseAccelMode("hvf", "--accel")).toThrow(/--accel: .*"hvf"/);
  });
});

describe("chooseAccel", () => {
  it.each<[string, KvmFacts, boolean, RegExp]>([
    ["every probe passed", good, true, /opens, KVM_CREATE_VM works, the CPU has vmx/],
    ["no device", { ...good, openError: "ENOENT" }, false, /\/dev\/kvm does not open \(ENOENT\)/],
    ["no permission", { ...good, openError: "EACCES" }, false, /does not open \(EACCES\)/],
    ["KVM_CREATE_VM fails", { ...good, createVm: "ENOMEM" }, false, /KVM_CREATE_VM .*ENOMEM/],
    ["ioctl not tried", { device: "/dev/kvm", cpuFlag: "svm" }, false, /not tried/],
    // This machine: the device works, the CPU has no flag, guests hang.
    ["no vmx/svm", { ...good, cpuFlag: "" }, false, /advertises no vmx\/svm/],
  ])("auto: %s", (_, facts, wantKvm, why) => {
    const c = chooseAccel(auto, facts);
    expect(c.kvm).toBe(wantKvm);
    expect(c.watchdog).toBe(wantKvm);
    expect(c.why).toMatch(why);
    expect(c.why.startsWith("auto (default)")).toBe(true);
  });

  it("tcg never looks at KVM; kvm tries a CPU without the flag but not a device that cannot start a VM", () => {
    expect(chooseAccel({ mode: "tcg", from: "NETAGENT_ACCEL" }, null)).toEqual({
      kvm: false,
      watchdog: false,
      why: "NETAGENT_ACCEL tcg",
    });
    const noFlag = chooseAccel(kvm, { ...good, cpuFlag: "" });
    expect(noFlag).toMatchObject({ kvm: true, watchdog: true });
    expect(noFlag.why).toMatch(/--accel kvm, although the CPU advertises no vmx\/svm/);
    expect(() => chooseAccel(kvm, { ...good, openError: "ENOENT" })).toThrow(
      "--accel kvm: cannot use KVM: /dev/kvm does not open (ENOENT)",
    );
    expect(() => chooseAccel(kvm, { ...good, createVm: "EPERM" })).toThrow(/EPERM/);
  });

  it("decideAccel probes only when the mode needs it", async () => {
    let probes = 0;
    const probe = () => {
      probes++;
      return good;
    };
    expect((await decideAccel({ mode: "tcg", from: "--accel" }, probe)).kvm).toBe(false);
    expect(probes).toBe(0);
    expect((await decideAccel(auto, probe)).kvm).toBe(true);
    expect(probes).toBe(1);
  });
});

describe("the guest's architecture against the host's", () => {
  const arm64 = GUEST_ARCHES.arm64;
  const onX64 = { guest: arm64, hostArch: "x64" };
  const onArm64 = { guest: arm64, hostArch: "arm64" };

  it("an arm64 guest on an x86_64 host runs under TCG, even with a working KVM; kvm refuses", () => {
    const c = chooseAccel(auto, good, onX64);
    expect(c).toMatchObject({ kvm: false, watchdog: false });
    expect(c.why).toBe(
      "auto (default): an arm64 guest on an x64 host (KVM runs only the host's own architecture)",
    );
    expect(() => chooseAccel(kvm, good, onX64)).toThrow(
      /--accel kvm: cannot use KVM: an arm64 guest on an x64 host/,
    );
  });

  it("on an arm64 host, KVM needs the device and KVM_CREATE_VM, not an x86 CPU flag", () => {
    const armFacts = { ...good, cpuFlag: "" };
    expect(chooseAccel(auto, armFacts, onArm64)).toMatchObject({ kvm: true, watchdog: true });
    expect(chooseAccel(auto, { ...armFacts, openError: "ENOENT" }, onArm64).kvm).toBe(false);
    // The x86_64 guest keeps its flag check.
    const x86 = { guest: GUEST_ARCHES.x86_64, hostArch: "x64" };
    expect(chooseAccel(auto, armFacts, x86).kvm).toBe(false);
  });

  it("decideAccel does not probe KVM for a guest it cannot run", async () => {
    let probes = 0;
    const probe = () => {
      probes++;
      return good;
    };
    const foreign = process.arch === "arm64" ? GUEST_ARCHES.x86_64 : arm64;
    expect((await decideAccel(auto, probe, foreign)).kvm).toBe(false);
    expect(probes).toBe(0);
  });
});

describe("probeKvm", () => {
  it("on a machine without /dev/kvm (a path that does not exist): ENOENT, and auto means TCG", async () => {
    const facts = await probeKvm("/nonexistent/dev/kvm", "/nonexistent/cpuinfo");
    expect(facts).toEqual({ device: "/nonexistent/dev/kvm", openError: "ENOENT", cpuFlag: "" });
    const c = await decideAccel(auto, () => facts);
    expect(c).toMatchObject({ kvm: false, watchdog: false });
    expect(c.why).toMatch(/does not open \(ENOENT\)/);
  });

  it("a device that opens but is not KVM fails the ioctl (ENOTTY)", async () => {
    const facts = await probeKvm("/dev/null", "/proc/cpuinfo");
    expect(facts.openError).toBeUndefined();
    expect(facts.createVm).toBe("KVM_GET_API_VERSION: ENOTTY");
    expect(chooseAccel(auto, facts).kvm).toBe(false);
  });

  it("reads the CPU flag from the cpuinfo path it is given", async () => {
    const facts = await probeKvm("/nonexistent/dev/kvm", "/proc/cpuinfo");
    const { readFileSync } = await import("node:fs");
    expect(facts.cpuFlag).toBe(cpuVirtFlag(readFileSync("/proc/cpuinfo", "utf8")));
  });
});
