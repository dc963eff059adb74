import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  BLK_ROOT,
  BOOT_MODULES,
  BOOT_MODULES_LIST,
  BOOT_ROOT_FILE,
  type BootInputs,
  buildBootManifest,
  NEWROOT,
  PMEM_ROOT,
} from "../../rootfs/boot-manifest";
import type { Entry } from "../../rootfs/manifest";
import {
  moduleName,
  parseModulesBuiltin,
  parseModulesDep,
  resolveModules,
} from "../../rootfs/modules";

const inputs: BootInputs = {
  kernelRelease: "6.1.0-57-amd64",
  init: "/src/rootfs/boot-init.sh",
  busybox: "/bin/busybox",
  applets: ["bin/sh", "bin/mount", "sbin/insmod", "sbin/switch_root", "bin/busybox"],
  modules: ["kernel/lib/libcrc32c.ko", "kernel/fs/erofs/erofs.ko"],
  modulesDir: "/lib/modules/6.1.0-57-amd64",
  packageOf: (p) => (p === "/bin/busybox" ? "busybox-static" : undefined),
};

const byPath = (entries: Entry[]) => new Map(entries.map((e) => [e.path, e]));

describe("buildBootManifest", () => {
  const entries = buildBootManifest(inputs);
  const image = byPath(entries);

  it("has boot-init.sh as /init, busybox with its applets, and the mount point", () => {
    expect(image.get("/init")).toMatchObject({ kind: "file", mode: 0o755, source: inputs.init });
    expect(image.get("/bin/busybox")).toMatchObject({ kind: "file", origin: "busybox-static" });
    expect(image.get("/sbin/switch_root")).toMatchObject({
      kind: "symlink",
      target: "/bin/busybox",
    });
    expect(image.get(NEWROOT)).toMatchObject({ kind: "dir", mode: 0o755 });
    expect(image.get("/dev/console")).toMatchObject({ kind: "chardev", major: 5, minor: 1 });
  });

  it("ships the modules under the release and lists them in load order", () => {
    const root = "/lib/modules/6.1.0-57-amd64";
    expect(image.get(`${root}/kernel/fs/erofs/erofs.ko`)).toMatchObject({
      kind: "file",
      mode: 0o644,
      source: `${root}/kernel/fs/erofs/erofs.ko`,
      origin: "kernel",
    });
    expect(image.get(BOOT_MODULES_LIST)).toMatchObject({
      content: "kernel/lib/libcrc32c.ko\nkernel/fs/erofs/erofs.ko\n",
    });
  });

  it("names the root device and its mount options: pmem with DAX by default, virtio-blk without", () => {
    expect(image.get(BOOT_ROOT_FILE)).toMatchObject({
      kind: "text",
      content: "/dev/pmem0 ro,dax=always\n",
    });
    expect(PMEM_ROOT.modules).toBe(BOOT_MODULES);
    const blk = byPath(buildBootManifest({ ...inputs, root: BLK_ROOT }));
    expect(blk.get(BOOT_ROOT_FILE)).toMatchObject({ content: "/dev/vda ro\n" });
    expect(BLK_ROOT.modules).toContain("virtio_blk");
    expect(BLK_ROOT.modules).not.toContain("virtio_pmem");
  });

  it("holds neither the agent nor iproute2: those are in the root image", () => {
    const paths = entries.map((e) => e.path);
    expect(paths.filter((p) => p.includes("netagent") || p.includes(".so"))).toEqual([]);
    expect(paths).toEqual([...paths].sort());
  });

  it("refuses a module listed twice", () => {
    expect(() =>
      buildBootManifest({
        ...inputs,
        modules: ["kernel/fs/erofs/erofs.ko", "kernel/fs/erofs/erofs.ko"],
      }),
    ).toThrow("two entries for /lib/modules/6.1.0-57-amd64/kernel/fs/erofs/erofs.ko");
  });
});

describe("BOOT_MODULES against this machine's kernel", () => {
  const release = readdirSync("/lib/modules").find((r) => r.includes("amd64"));
  it("resolve to virtio-pmem and erofs with crc32c loaded before libcrc32c", () => {
    expect(release, "Debian's linux-image-amd64 in /lib/modules").toBeDefined();
    const dir = `/lib/modules/${release}`;
    const r = resolveModules(
      BOOT_MODULES,
      parseModulesDep(readFileSync(`${dir}/modules.dep`, "utf8")),
      parseModulesBuiltin(readFileSync(`${dir}/modules.builtin`, "utf8")),
    );
    const names = r.load.map(moduleName);
    for (const m of ["virtio_pci", "libnvdimm", "virtio_pmem", "nd_pmem", "erofs"]) {
      expect(names).toContain(m);
    }
    const at = (m: string) => names.indexOf(m);
    expect(at("crc32c_generic")).toBeGreaterThanOrEqual(0);
    expect(at("crc32c_generic")).toBeLessThan(at("libcrc32c"));
    expect(at("libcrc32c")).toBeLessThan(at("erofs"));
    expect(at("libnvdimm")).toBeLessThan(at("virtio_pmem"));
    expect(at("virtio_pmem")).toBeLessThan(at("nd_pmem"));
  });
});

describe("boot-init.sh", () => {
  it("is valid shell for busybox sh (and sh) with no syntax errors", () => {
    const path = new URL("../../rootfs/boot-init.sh", import.meta.url).pathname;
    for (const shell of [["busybox", "sh"], ["sh"]]) {
      const r = spawnSync(shell[0] as string, [...shell.slice(1), "-n", path], {
        encoding: "utf8",
      });
      if (r.error) continue;
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
    }
  });

  it("mounts the modules' list, the device and the mount point the manifest names", () => {
    const text = readFileSync(new URL("../../rootfs/boot-init.sh", import.meta.url), "utf8");
    expect(text).toContain(`</etc/boot.modules`);
    expect(BOOT_MODULES_LIST).toBe("/etc/boot.modules");
    expect(text).toContain(`NEWROOT=${NEWROOT}`);
    // The device and options come from the file the manifest writes, nothing else.
    expect(text).toContain("read -r ROOT_DEV ROOT_OPTIONS </etc/boot.root");
    expect(BOOT_ROOT_FILE).toBe("/etc/boot.root");
    expect(text).toMatch(/mount -t erofs -o "\$ROOT_OPTIONS" "\$ROOT_DEV" "\$NEWROOT"/);
    expect(text).not.toMatch(/ROOT_DEV=/);
  });
});
