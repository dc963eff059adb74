import { describe, expect, it } from "vitest";
import {
  moduleName,
  parseModulesBuiltin,
  parseModulesDep,
  resolveModules,
} from "../../rootfs/modules";

// Lines copied from Debian 12's 6.1 modules.dep (plus one built-in module).
const DEP = `kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/net/core/failover.ko:
kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko
kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/char/virtio_console.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/net/vmw_vsock/vsock.ko:
kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko: kernel/net/vmw_vsock/vsock.ko
kernel/net/vmw_vsock/vmw_vsock_virtio_transport.ko: kernel/net/vmw_vsock/vmw_vsock_virtio_transport_common.ko kernel/net/vmw_vsock/vsock.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/block/virtio-blk.ko.xz: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
`;
const BUILTIN = "kernel/drivers/tty/serial/8250/8250.ko\nkernel/net/unix/unix.ko\n";
const WANTED = [
  "virtio_pci",
  "virtio_net",
  "virtio_console",
  "vsock",
  "vmw_vsock_virtio_transport",
];

describe("moduleName", () => {
  it.each([
    ["kernel/drivers/virtio/virtio_pci.ko", "virtio_pci"],
    ["kernel/drivers/block/virtio-blk.ko.xz", "virtio_blk"],
    ["a/b/c.ko.zst", "c"],
    ["x.ko.gz", "x"],
  ])("%s -> %s", (path, name) => expect(moduleName(path)).toBe(name));
});

describe("resolveModules", () => {
  const deps = parseModulesDep(DEP);
  const builtin = parseModulesBuiltin(BUILTIN);

  it("loads every dependency before its dependants, each once", () => {
    const { load, builtin: inKernel } = resolveModules(WANTED, deps, builtin);
    expect(inKernel).toEqual([]);
    expect(new Set(load).size).toBe(load.length);
    for (const [i, path] of load.entries()) {
      for (const dep of deps.get(path) ?? []) expect(load.indexOf(dep)).toBeLessThan(i);
    }
    expect(load.map(moduleName)).toEqual([
      "virtio_pci_legacy_dev",
      "virtio_pci_modern_dev",
      "virtio_ring",
      "virtio",
      "virtio_pci",
      "failover",
      "net_failover",
      "virtio_net",
      "virtio_console",
      "vsock",
      "vmw_vsock_virtio_transport_common",
      "vmw_vsock_virtio_transport",
    ]);
  });

  it("takes nothing it was not asked for, directly or through a dependency", () => {
    const { load } = resolveModules(["virtio_console"], deps, builtin);
    expect(load.map(moduleName)).toEqual(["virtio_ring", "virtio", "virtio_console"]);
  });

  it("reports built-in modules instead of loading them, dashes or not", () => {
    const { load, builtin: inKernel } = resolveModules(
      ["unix", "8250", "virtio-blk"],
      deps,
      builtin,
    );
    expect(inKernel).toEqual(["unix", "8250"]);
    expect(load).toEqual([
      "kernel/drivers/virtio/virtio_ring.ko",
      "kernel/drivers/virtio/virtio.ko",
      "kernel/drivers/block/virtio-blk.ko.xz",
    ]);
  });

  it("fails on a module that is nowhere", () => {
    expect(() => resolveModules(["nosuch"], deps, builtin)).toThrow(/"nosuch" is neither built in/);
  });

  it("fails when modules.dep names a dependency it does not list", () => {
    const broken = parseModulesDep("kernel/a.ko: kernel/b.ko\n");
    expect(() => resolveModules(["a"], broken, new Set())).toThrow(/needs kernel\/b.ko/);
  });

  it("parses the real modules.dep of this machine when there is one", async () => {
    const { readdirSync, readFileSync, existsSync } = await import("node:fs");
    const release = existsSync("/lib/modules") ? readdirSync("/lib/modules")[0] : undefined;
    if (!release || !existsSync(`/lib/modules/${release}/modules.dep`)) return;
    const real = resolveModules(
      WANTED,
      parseModulesDep(readFileSync(`/lib/modules/${release}/modules.dep`, "utf8")),
      parseModulesBuiltin(readFileSync(`/lib/modules/${release}/modules.builtin`, "utf8")),
    );
    expect(real.load.length + real.builtin.length).toBeGreaterThanOrEqual(WANTED.length);
  });
});
