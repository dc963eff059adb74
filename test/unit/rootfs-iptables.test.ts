/**
 * The packet-filter part of the guest image: the manifest carries
 * xtables-nft-multi, a link per command, the listed extensions (Debian's
 * links kept as links) and lists them; the module list resolves against the
 * Debian kernel's own modules.dep; the probe finds this host's files.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  IPTABLES_COMMANDS,
  IPTABLES_EXTENSIONS,
  IPTABLES_MODULES,
  type IptablesInputs,
  XTABLES_DIR,
  XTABLES_MULTI,
} from "../../rootfs/iptables";
import { probeIptables } from "../../rootfs/iptables-probe";
import { buildManifest, type Entry, type ImageInputs, renderManifest } from "../../rootfs/manifest";
import { parseModulesBuiltin, parseModulesDep, resolveModules } from "../../rootfs/modules";

const NAT_LINKS = new Set([
  "libxt_REDIRECT.so",
  "libxt_DNAT.so",
  "libxt_SNAT.so",
  "libxt_MASQUERADE.so",
]);

const iptables: IptablesInputs = {
  multi: "/usr/sbin/xtables-nft-multi",
  extensions: IPTABLES_EXTENSIONS.map((name) =>
    NAT_LINKS.has(name)
      ? { name, linkTo: "libxt_NAT.so" }
      : name === "libxt_state.so"
        ? { name, linkTo: "libxt_conntrack.so" }
        : { name, source: `${XTABLES_DIR}/${name}` },
  ),
};

const base: ImageInputs = {
  kernelRelease: "6.1.0-57-amd64",
  agent: "/src/dist/netagent",
  init: "/src/rootfs/init.sh",
  busybox: "/bin/busybox",
  applets: ["bin/sh", "sbin/insmod"],
  ip: "/usr/bin/ip",
  libraries: ["/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libnftnl.so.11"],
  modules: ["kernel/net/netfilter/x_tables.ko", "kernel/net/netfilter/nf_tables.ko"],
  modulesDir: "/lib/modules/6.1.0-57-amd64",
  packageOf: (p) =>
    p.startsWith("/usr/sbin/xtables") || p.startsWith(XTABLES_DIR) ? "iptables" : undefined,
  hostname: "guest",
};

const byPath = (entries: Entry[]) => new Map(entries.map((e) => [e.path, e]));

describe("the image's iptables", () => {
  const entries = buildManifest({ ...base, iptables });
  const image = byPath(entries);

  it("carries xtables-nft-multi and links every command to it", () => {
    expect(image.get(XTABLES_MULTI)).toMatchObject({
      kind: "file",
      mode: 0o755,
      origin: "iptables",
    });
    for (const cmd of IPTABLES_COMMANDS) {
      expect(image.get(`/usr/sbin/${cmd}`)).toMatchObject({
        kind: "symlink",
        target: XTABLES_MULTI,
      });
    }
  });

  it("carries every listed extension; Debian's links stay links inside the directory", () => {
    for (const name of IPTABLES_EXTENSIONS)
      expect(image.has(`${XTABLES_DIR}/${name}`), name).toBe(true);
    expect(image.get(`${XTABLES_DIR}/libxt_REDIRECT.so`)).toMatchObject({
      kind: "symlink",
      target: "libxt_NAT.so",
    });
    expect(image.get(`${XTABLES_DIR}/libxt_NAT.so`)).toMatchObject({ kind: "file", mode: 0o644 });
    expect(image.get(`${XTABLES_DIR}/libxt_owner.so`)).toMatchObject({ kind: "file" });
  });

  it("lists them in the manifest text", () => {
    const text = renderManifest(entries, () => 1, [["entries", String(entries.length)]]);
    expect(text).toContain(`/usr/sbin/iptables-restore -> ${XTABLES_MULTI}`);
    expect(text).toContain(`${XTABLES_DIR}/libxt_REDIRECT.so -> libxt_NAT.so`);
    expect(text).toMatch(
      /\/usr\/sbin\/xtables-nft-multi {2}\[iptables: \/usr\/sbin\/xtables-nft-multi\]/,
    );
  });

  it("an image without iptables has none of it", () => {
    const bare = byPath(buildManifest(base));
    expect(bare.has(XTABLES_MULTI)).toBe(false);
    expect(bare.has("/usr/sbin/iptables-save")).toBe(false);
  });

  it("refuses a missing extension and a link to one the image does not carry", () => {
    const missing = {
      ...iptables,
      extensions: iptables.extensions.filter((e) => e.name !== "libxt_owner.so"),
    };
    expect(() => buildManifest({ ...base, iptables: missing })).toThrow(
      "image: xtables extension libxt_owner.so not found",
    );
    const dangling = {
      ...iptables,
      extensions: iptables.extensions.map((e) =>
        e.name === "libxt_DNAT.so" ? { name: e.name, linkTo: "libxt_bpf.so" } : e,
      ),
    };
    expect(() => buildManifest({ ...base, iptables: dangling })).toThrow(
      "image: libxt_DNAT.so links to libxt_bpf.so, which the image does not carry",
    );
  });
});

/** The Debian kernel the image is built from (as rootfs/build.ts picks it). */
const release = existsSync("/lib/modules")
  ? readdirSync("/lib/modules")
      .filter(
        (r) => existsSync(`/boot/vmlinuz-${r}`) && existsSync(`/lib/modules/${r}/modules.dep`),
      )
      .sort()
      .at(-1)
  : undefined;

describe.runIf(release !== undefined)("against this host's Debian kernel and iptables", () => {
  it("every listed module resolves in the kernel's modules.dep (nf_tables, nft_compat, x_tables...)", () => {
    const dir = `/lib/modules/${release}`;
    const r = resolveModules(
      IPTABLES_MODULES,
      parseModulesDep(readFileSync(`${dir}/modules.dep`, "utf8")),
      parseModulesBuiltin(readFileSync(`${dir}/modules.builtin`, "utf8")),
    );
    const names = r.load.map((p) => p.replace(/^.*\//, "").replace(/\.ko.*$/, ""));
    for (const m of [
      "x_tables",
      "nf_tables",
      "nft_compat",
      "nf_nat",
      "nf_conntrack",
      "xt_REDIRECT",
      "xt_owner",
    ]) {
      expect(names).toContain(m);
    }
    // Dependencies first: x_tables before nft_compat, nf_nat before xt_REDIRECT;
    // libcrc32c's soft dependency crc32c before it (else nf_tables cannot load).
    expect(names.indexOf("crc32c_generic")).toBeLessThan(names.indexOf("libcrc32c"));
    expect(names.indexOf("nf_log_syslog")).toBeLessThan(names.indexOf("xt_LOG"));
    expect(names.indexOf("x_tables")).toBeLessThan(names.indexOf("nft_compat"));
    expect(names.indexOf("nf_nat")).toBeLessThan(names.indexOf("xt_REDIRECT"));
  });

  it("probeIptables finds every extension here, REDIRECT as Debian's link to libxt_NAT.so", () => {
    const found = probeIptables();
    expect(found.multi).toBe(XTABLES_MULTI);
    expect(found.extensions.map((e) => e.name)).toEqual([...IPTABLES_EXTENSIONS]);
    expect(found.extensions.find((e) => e.name === "libxt_REDIRECT.so")).toEqual({
      name: "libxt_REDIRECT.so",
      linkTo: "libxt_NAT.so",
    });
    expect(() => buildManifest({ ...base, iptables: found })).not.toThrow();
  });
});
