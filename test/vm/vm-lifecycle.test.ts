/**
 * The runner's process handling, with fake QEMUs (tiny shell scripts): a
 * QEMU that ignores SIGTERM is killed by PID and reaped; one that dies at
 * start fails the wait at once, with its stderr; a missing binary fails
 * start. No VM is booted here.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Vm } from "../../src/host/vm/vm";
import { pidAlive } from "../helpers/process";

const dir = mkdtempSync(join(tmpdir(), "netagent-fakeqemu-"));
const kernel = join(dir, "vmlinuz");
const initrd = join(dir, "initrd.img");
writeFileSync(kernel, "");
writeFileSync(initrd, "");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fakeQemu(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe("Vm process handling", () => {
  it("kills a QEMU that ignores SIGTERM by its PID, reaps it and removes its directory", async () => {
    // not a wait: a stand-in for a QEMU that ignores SIGTERM, killed by the runner
    const qemu = fakeQemu("stubborn", "trap '' TERM\necho booting\nwhile :; do sleep 0.1; done");
    const vm = await Vm.start({ qemu, kernel, initrd, accel: "tcg" });
    await vm.console.waitFor("booting", 5000);
    const exit = await vm.stop(100);
    expect(exit).toEqual({ code: null, signal: "SIGKILL" });
    expect(pidAlive(vm.pid)).toBe(false);
    expect(existsSync(vm.dir)).toBe(false);
  }, 20_000);

  it("fails the wait for the agent at once when QEMU dies, with what it said", async () => {
    const qemu = fakeQemu(
      "dying",
      "echo 'qemu-system-x86_64: -device virtio-net-pci: oops' >&2\nexit 1",
    );
    const vm = await Vm.start({ qemu, kernel, initrd, accel: "tcg" });
    const t0 = performance.now();
    await expect(vm.waitForAgent(60_000)).rejects.toThrow(/qemu exited/);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(await vm.stop()).toEqual({ code: 1, signal: null });
    await expect(vm.console.waitFor("x", 1000)).rejects.toThrow(/oops/);
  }, 20_000);

  it("refuses to start without the binary or the image", async () => {
    await expect(
      Vm.start({ qemu: join(dir, "nosuch"), kernel, initrd, accel: "tcg" }),
    ).rejects.toThrow(/cannot start/);
    await expect(Vm.start({ kernel: join(dir, "none"), initrd, accel: "tcg" })).rejects.toThrow(
      /missing: run npm run rootfs/,
    );
  });
});
