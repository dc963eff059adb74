import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  AGENT_PATH,
  buildManifest,
  checkManifest,
  type Entry,
  type ImageInputs,
  IP_PATH,
  LATE_MODULES_LIST,
  MODULES_LIST,
  renderManifest,
  withParents,
} from "../../rootfs/manifest";

const inputs: ImageInputs = {
  kernelRelease: "6.1.0-57-amd64",
  agent: "/src/dist/netagent",
  init: "/src/rootfs/init.sh",
  busybox: "/bin/busybox",
  applets: ["bin/sh", "bin/ls", "sbin/ip", "sbin/insmod", "usr/bin/setsid", "bin/busybox"],
  ip: "/usr/bin/ip",
  libraries: [
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/x86_64-linux-gnu/libmnl.so.0",
    "/lib/x86_64-linux-gnu/libc.so.6",
  ],
  modules: ["kernel/drivers/virtio/virtio_ring.ko", "kernel/drivers/virtio/virtio.ko"],
  modulesDir: "/lib/modules/6.1.0-57-amd64",
  packageOf: (p) => ({ "/usr/bin/ip": "iproute2", "/lib/x86_64-linux-gnu/libc.so.6": "libc6" })[p],
  hostname: "guest",
};

const byPath = (entries: Entry[]) => new Map(entries.map((e) => [e.path, e]));

describe("buildManifest", () => {
  const entries = buildManifest(inputs);
  const image = byPath(entries);

  it("puts init, the agent and iproute2's ip in place, executable", () => {
    expect(image.get("/init")).toMatchObject({ kind: "file", mode: 0o755, source: inputs.init });
    expect(image.get(AGENT_PATH)).toMatchObject({
      kind: "file",
      mode: 0o755,
      source: inputs.agent,
    });
    // iproute2 wins over busybox's ip applet.
    expect(image.get(IP_PATH)).toMatchObject({
      kind: "file",
      source: "/usr/bin/ip",
      origin: "iproute2",
    });
  });

  it("links busybox applets to /bin/busybox, never busybox to itself", () => {
    expect(image.get("/bin/sh")).toMatchObject({ kind: "symlink", target: "/bin/busybox" });
    expect(image.get("/usr/bin/setsid")).toMatchObject({ kind: "symlink", target: "/bin/busybox" });
    expect(image.get("/bin/busybox")).toMatchObject({ kind: "file", mode: 0o755 });
  });

  it("copies each library once, at the path ldd gave, with its package", () => {
    const libs = entries.filter((e) => e.path.includes(".so"));
    expect(libs.map((e) => e.path)).toEqual([
      "/lib/x86_64-linux-gnu/libc.so.6",
      "/lib/x86_64-linux-gnu/libmnl.so.0",
      "/lib64/ld-linux-x86-64.so.2",
    ]);
    expect(image.get("/lib/x86_64-linux-gnu/libc.so.6")).toMatchObject({ origin: "libc6" });
    expect(image.get("/lib/x86_64-linux-gnu/libmnl.so.0")).toMatchObject({ origin: "host" });
  });

  it("ships the modules under the release and lists them in load order", () => {
    const root = "/lib/modules/6.1.0-57-amd64";
    expect(image.get(`${root}/kernel/drivers/virtio/virtio.ko`)).toMatchObject({
      kind: "file",
      mode: 0o644,
      source: `${root}/kernel/drivers/virtio/virtio.ko`,
    });
    expect(image.get(MODULES_LIST)).toMatchObject({
      content: "kernel/drivers/virtio/virtio_ring.ko\nkernel/drivers/virtio/virtio.ko\n",
    });
  });

  it("lists the late modules (loaded beside the agent) apart, only when there are some", () => {
    expect(image.get(LATE_MODULES_LIST)).toBeUndefined();
    const late = byPath(
      buildManifest({ ...inputs, lateModules: ["kernel/net/netfilter/x_tables.ko"] }),
    );
    expect(late.get(LATE_MODULES_LIST)).toMatchObject({
      kind: "text",
      content: "kernel/net/netfilter/x_tables.ko\n",
    });
    expect(late.get(MODULES_LIST)).toEqual(image.get(MODULES_LIST));
    const root = "/lib/modules/6.1.0-57-amd64";
    expect(late.get(`${root}/kernel/net/netfilter/x_tables.ko`)).toMatchObject({
      kind: "file",
      source: `${root}/kernel/net/netfilter/x_tables.ko`,
    });
  });

  it("has an empty /etc/resolv.conf, a hostname and a /dev/console node", () => {
    expect(image.get("/etc/resolv.conf")).toMatchObject({ kind: "text", content: "" });
    expect(image.get("/etc/hostname")).toMatchObject({ content: "guest\n" });
    expect(image.get("/dev/console")).toMatchObject({ kind: "chardev", major: 5, minor: 1 });
    expect(image.get("/tmp")).toMatchObject({ kind: "dir", mode: 0o1777 });
  });

  it("is sorted with every parent directory before its children", () => {
    const paths = entries.map((e) => e.path);
    expect(paths).toEqual([...paths].sort());
    for (const e of entries) {
      const parent = e.path.slice(0, e.path.lastIndexOf("/"));
      if (parent) expect(image.get(parent)?.kind).toBe("dir");
    }
  });

  it("refuses two sources for one path", () => {
    expect(() => buildManifest({ ...inputs, libraries: [AGENT_PATH] })).toThrow(
      `image: two entries for ${AGENT_PATH}`,
    );
  });
});

describe("checkManifest", () => {
  it("refuses a dangling absolute link and a file under a file", () => {
    const link: Entry = { kind: "symlink", path: "/sh", target: "/bin/busybox", origin: "t" };
    expect(() => checkManifest(withParents([link]))).toThrow("/sh -> /bin/busybox dangles");
    const a: Entry = { kind: "text", path: "/a", mode: 0o644, content: "", origin: "t" };
    const b: Entry = { kind: "text", path: "/a/b", mode: 0o644, content: "", origin: "t" };
    expect(() => checkManifest([a, b])).toThrow("parent of /a/b is not a directory");
  });
});

describe("renderManifest", () => {
  it("lists every entry with its size, then the totals", () => {
    const entries = buildManifest(inputs);
    const text = renderManifest(entries, (e) => (e.kind === "file" ? 1000 : 0), [
      ["unpacked", "1 MiB"],
    ]);
    const lines = text.trimEnd().split("\n");
    expect(lines.length).toBe(entries.length + 2);
    expect(lines).toContain(`-0755       1000  ${AGENT_PATH}  [dist/netagent: /src/dist/netagent]`);
    expect(lines).toContain("l0777          0  /bin/sh -> /bin/busybox");
    expect(lines).toContain("c0600          0  /dev/console  [char 5,1]");
    expect(lines.at(-1)).toBe("# unpacked  1 MiB");
  });
});

describe("init.sh", () => {
  it("is valid shell for busybox sh (and sh) with no syntax errors", () => {
    const path = new URL("../../rootfs/init.sh", import.meta.url).pathname;
    for (const shell of [["busybox", "sh"], ["sh"]]) {
      const r = spawnSync(shell[0] as string, [...shell.slice(1), "-n", path], {
        encoding: "utf8",
      });
      if (r.error) continue;
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
    }
  });
});
