import { describe, expect, it } from "vitest";
import {
  checkMac,
  type GuestConfig,
  hostAgentAddress,
  kernelCmdline,
  qemuArgs,
} from "../../src/host/vm/qemu-args";

const base: GuestConfig = {
  kernel: "/g/vmlinuz",
  initrd: "/g/initrd.img",
  memoryMiB: 512,
  cpus: 1,
  kvm: false,
  mac: "52:54:00:AB:CD:EF",
  channel: { kind: "serial", socket: "/run/vm/agent.sock" },
  startAgent: true,
  debugConsole: false,
  kernelMessages: false,
};

/** The value following each occurrence of `flag`. */
const values = (args: string[], flag: string) =>
  args.flatMap((a, i) => (a === flag ? [args[i + 1] as string] : []));

describe("qemuArgs", () => {
  it("uses TCG with -cpu max without KVM, and KVM with -cpu host when there is one", () => {
    expect(qemuArgs(base).join(" ")).toContain("-accel tcg -cpu max");
    expect(qemuArgs({ ...base, kvm: true }).join(" ")).toContain("-accel kvm -cpu host");
  });

  it("gives the guest one virtio-net NIC with the MAC, on a hub that leads nowhere", () => {
    const args = qemuArgs(base);
    expect(values(args, "-netdev")).toEqual(["hubport,id=net0,hubid=0"]);
    expect(values(args, "-device")).toContain("virtio-net-pci,netdev=net0,mac=52:54:00:ab:cd:ef");
    expect(args).toContain("-nodefaults");
    // No other way onto a network: no -nic, no -net, no second netdev.
    expect(args.filter((a) => a === "-nic" || a === "-net")).toEqual([]);
  });

  it("backs virtio-serial port agent.channel.0 with the host socket", () => {
    const args = qemuArgs(base);
    expect(values(args, "-chardev")).toContain(
      "socket,id=agent0,path=/run/vm/agent.sock,server=on,wait=off",
    );
    expect(values(args, "-device")).toContain(
      "virtserialport,bus=vser0.0,chardev=agent0,name=agent.channel.0",
    );
    expect(hostAgentAddress(base)).toBe("unix:///run/vm/agent.sock");
  });

  it("uses vhost-vsock when asked", () => {
    const cfg: GuestConfig = { ...base, channel: { kind: "vsock", cid: 42 } };
    expect(values(qemuArgs(cfg), "-device")).toContain("vhost-vsock-pci,guest-cid=42");
    expect(kernelCmdline(cfg)).toContain("agent.server_addr=vsock://-1:1024");
    expect(hostAgentAddress(cfg)).toBe("vsock://42:1024");
  });

  it("puts the serial console on QEMU's stdio, with no monitor, and exits on reboot", () => {
    const args = qemuArgs(base);
    expect(values(args, "-chardev")).toContain("stdio,id=console0,signal=off");
    expect(values(args, "-serial")).toEqual(["chardev:console0"]);
    expect(values(args, "-monitor")).toEqual(["none"]);
    expect(args).toContain("-no-reboot");
    expect(args).toContain("-nographic");
  });

  it("rejects bad sizes", () => {
    expect(() => qemuArgs({ ...base, memoryMiB: 64 })).toThrow(/at least 128/);
    expect(() => qemuArgs({ ...base, cpus: 0 })).toThrow(/at least 1/);
  });
});

describe("kernelCmdline", () => {
  it("sets the agent's address and the init switches", () => {
    expect(kernelCmdline(base)).toBe(
      "console=ttyS0 panic=-1 no_timer_check quiet agent.server_addr=serial://agent.channel.0 init.nojit",
    );
    expect(
      kernelCmdline({
        ...base,
        debugConsole: true,
        startAgent: false,
        logLevel: "debug",
        kernelMessages: true,
      }),
    ).toBe(
      "console=ttyS0 panic=-1 no_timer_check agent.server_addr=serial://agent.channel.0 agent.log=debug agent.debug_console init.noagent init.nojit",
    );
  });

  it("turns the guest's JIT off under TCG only", () => {
    expect(kernelCmdline({ ...base, kvm: false }).split(" ")).toContain("init.nojit");
    expect(kernelCmdline({ ...base, kvm: true }).split(" ")).not.toContain("init.nojit");
  });

  it("refuses words with spaces", () => {
    expect(() => kernelCmdline({ ...base, extraCmdline: ["a b"] })).toThrow(/has spaces/);
  });
});

describe("an arm64 guest", () => {
  const arm: GuestConfig = { ...base, arch: "arm64" };

  it("is -M virt with its PL011 console, the same virtio PCI devices, and no x86 words", () => {
    const args = qemuArgs(arm);
    expect(values(args, "-machine")).toEqual(["virt,gic-version=max"]);
    expect(args.join(" ")).toContain("-accel tcg -cpu max");
    expect(values(args, "-device")).toContain("virtio-net-pci,netdev=net0,mac=52:54:00:ab:cd:ef");
    expect(values(args, "-device")).toContain("virtio-serial-pci,id=vser0");
    expect(kernelCmdline(arm).split(" ")).toEqual([
      "console=ttyAMA0",
      "panic=-1",
      "quiet",
      "agent.server_addr=serial://agent.channel.0",
      "init.nojit",
    ]);
  });

  it("leaves the x86_64 guest's words as they were", () => {
    expect(qemuArgs({ ...base, arch: "x86_64" })).toEqual(qemuArgs(base));
    expect(values(qemuArgs(base), "-machine")).toEqual(["q35"]);
  });
});

describe("checkMac", () => {
  it.each(["52:54:00:12:34:56", "02:00:00:00:00:01"])("accepts %s", (mac) => {
    expect(checkMac(mac)).toBe(mac);
  });
  it.each(["52:54:00:12:34", "52-54-00-12-34-56", "zz:54:00:12:34:56", "01:00:5e:00:00:01"])(
    "rejects %s",
    (mac) => expect(() => checkMac(mac)).toThrow(),
  );
});
