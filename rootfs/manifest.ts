/**
 * What goes into the guest image: every file, directory, link and device
 * node, its mode, and where it comes from. Pure: the executor probes the
 * host (ldd, modules.dep, busybox --list-full, dpkg -S) and passes the
 * answers in, so the whole layout is testable without root or a kernel.
 */
import { LATE_MODULES_LIST } from "../src/agent/services/modules-ready";
import { type IptablesInputs, iptablesEntries } from "./iptables";

export type Entry =
  | { kind: "dir"; path: string; mode: number }
  | { kind: "file"; path: string; mode: number; source: string; origin: string }
  | { kind: "text"; path: string; mode: number; content: string; origin: string }
  | { kind: "symlink"; path: string; target: string; origin: string }
  | { kind: "chardev"; path: string; mode: number; major: number; minor: number };

export interface ImageInputs {
  /** `uname -r` of the guest kernel; modules live under /lib/modules/RELEASE. */
  kernelRelease: string;
  /** Host path of the compiled agent (dist/netagent). */
  agent: string;
  /** Host path of the init script (rootfs/init.sh). */
  init: string;
  /** Host path of the static busybox. */
  busybox: string;
  /** `busybox --list-full`: applet paths without a leading slash (bin/sh, sbin/ip...). */
  applets: readonly string[];
  /** Host path of iproute2's `ip`. */
  ip: string;
  /**
   * Shared objects (and the dynamic loader) the agent and `ip` need: a host
   * path as ldd names it (the same path in the image), or where it goes and
   * where it is (an unpacked package of another architecture).
   */
  libraries: readonly (string | { path: string; source: string })[];
  /**
   * Module paths relative to /lib/modules/RELEASE, dependencies first:
   * the ones init loads before it starts the agent.
   */
  modules: readonly string[];
  /** Loaded by init beside the agent, after `modules` (the netfilter stack). */
  lateModules?: readonly string[];
  /** Host directory holding the modules (/lib/modules/RELEASE). */
  modulesDir: string;
  /** Debian package of a host path, when dpkg knows it. */
  packageOf: (hostPath: string) => string | undefined;
  hostname: string;
  /** The packet-filter tools (rootfs/iptables.ts); without it the image has none. */
  iptables?: IptablesInputs;
}

export const AGENT_PATH = "/usr/bin/netagent";
export const IP_PATH = "/sbin/ip";
export const MODULES_LIST = "/etc/init.modules";
export { LATE_MODULES_LIST };
/** The prompt of the debug shell; the VM runner waits for it. */
export const SHELL_PROMPT = "guest# ";

// Debian's static busybox runs its own applets before searching PATH, so
// "ip" would be busybox's: the alias makes it iproute2's, as the agent sees it.
const PROFILE = `export PATH=/sbin:/bin:/usr/sbin:/usr/bin
export HOME=/root
alias ip=${IP_PATH}
PS1='${SHELL_PROMPT}'
`;

/**
 * The image's entries, sorted by path (so parents come first), with every
 * parent directory present. Real files win over busybox applet links of
 * the same path (iproute2's /sbin/ip over busybox's). Throws on two
 * sources for one path or on a dangling absolute link.
 */
export function buildManifest(inputs: ImageInputs): Entry[] {
  const origin = (hostPath: string, fallback: string) => inputs.packageOf(hostPath) ?? fallback;
  const entries = new Map<string, Entry>();
  const add = (entry: Entry) => {
    const prior = entries.get(entry.path);
    if (prior !== undefined && !(prior.kind === "symlink" && prior.origin === "busybox applet")) {
      throw new Error(`image: two entries for ${entry.path}`);
    }
    entries.set(entry.path, entry);
  };

  for (const [path, mode] of [
    ["/proc", 0o555],
    ["/sys", 0o555],
    ["/dev", 0o755],
    ["/run", 0o755],
    ["/tmp", 0o1777],
    ["/root", 0o700],
    ["/var", 0o755],
  ] as const) {
    add({ kind: "dir", path, mode });
  }
  // The kernel opens /dev/console for init before devtmpfs is mounted.
  add({ kind: "chardev", path: "/dev/console", mode: 0o600, major: 5, minor: 1 });
  add({ kind: "chardev", path: "/dev/null", mode: 0o666, major: 1, minor: 3 });

  add({ kind: "file", path: "/init", mode: 0o755, source: inputs.init, origin: "rootfs/init.sh" });
  add({
    kind: "file",
    path: "/bin/busybox",
    mode: 0o755,
    source: inputs.busybox,
    origin: origin(inputs.busybox, "busybox"),
  });
  for (const applet of inputs.applets) {
    const path = `/${applet.replace(/^\/+/, "")}`;
    if (path === "/bin/busybox") continue;
    add({ kind: "symlink", path, target: "/bin/busybox", origin: "busybox applet" });
  }

  add({
    kind: "file",
    path: AGENT_PATH,
    mode: 0o755,
    source: inputs.agent,
    origin: `dist/${inputs.agent.slice(inputs.agent.lastIndexOf("/") + 1)}`,
  });
  add({
    kind: "file",
    path: IP_PATH,
    mode: 0o755,
    source: inputs.ip,
    origin: origin(inputs.ip, "iproute2"),
  });
  const libraries = new Map<string, string>();
  for (const lib of inputs.libraries) {
    const { path, source } = typeof lib === "string" ? { path: lib, source: lib } : lib;
    if (!path.startsWith("/")) throw new Error(`image: library path ${path} is not absolute`);
    const prior = libraries.get(path);
    if (prior !== undefined && prior !== source) {
      throw new Error(`image: library ${path} from both ${prior} and ${source}`);
    }
    libraries.set(path, source);
  }
  for (const [path, source] of libraries) {
    add({ kind: "file", path, mode: 0o755, source, origin: origin(source, "host") });
  }

  if (inputs.iptables) for (const e of iptablesEntries(inputs.iptables, origin)) add(e);

  const modulesRoot = `/lib/modules/${inputs.kernelRelease}`;
  for (const module of [...inputs.modules, ...(inputs.lateModules ?? [])]) {
    const source = `${inputs.modulesDir}/${module}`;
    add({
      kind: "file",
      path: `${modulesRoot}/${module}`,
      mode: 0o644,
      source,
      origin: origin(source, "kernel"),
    });
  }
  const text = (path: string, content: string, mode = 0o644) =>
    add({ kind: "text", path, mode, content, origin: "rootfs/manifest.ts" });
  text(MODULES_LIST, inputs.modules.map((m) => `${m}\n`).join(""));
  if (inputs.lateModules?.length) {
    text(LATE_MODULES_LIST, inputs.lateModules.map((m) => `${m}\n`).join(""));
  }
  text("/etc/hostname", `${inputs.hostname}\n`);
  // Empty on purpose: the Kata runtime bind-mounts over it and needs it to exist.
  text("/etc/resolv.conf", "");
  text("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
  text("/etc/group", "root:x:0:\ntty:x:5:\n");
  text("/etc/profile", PROFILE);

  return checkManifest(withParents([...entries.values()]));
}

/** Adds a 0755 directory for every missing ancestor and sorts by path. */
export function withParents(entries: readonly Entry[]): Entry[] {
  const byPath = new Map(entries.map((e) => [e.path, e]));
  for (const entry of entries) {
    let dir = entry.path.slice(0, entry.path.lastIndexOf("/"));
    while (dir !== "" && !byPath.has(dir)) {
      byPath.set(dir, { kind: "dir", path: dir, mode: 0o755 });
      dir = dir.slice(0, dir.lastIndexOf("/"));
    }
  }
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Throws unless every parent is a directory and every absolute link resolves in the image. */
export function checkManifest(entries: Entry[]): Entry[] {
  const byPath = new Map(entries.map((e) => [e.path, e]));
  for (const entry of entries) {
    if (!entry.path.startsWith("/") || entry.path.endsWith("/") || entry.path.includes("//")) {
      throw new Error(`image: bad path ${JSON.stringify(entry.path)}`);
    }
    const parent = entry.path.slice(0, entry.path.lastIndexOf("/"));
    if (parent !== "" && byPath.get(parent)?.kind !== "dir") {
      throw new Error(`image: parent of ${entry.path} is not a directory`);
    }
    if (entry.kind === "symlink" && entry.target.startsWith("/") && !byPath.has(entry.target)) {
      throw new Error(`image: ${entry.path} -> ${entry.target} dangles`);
    }
  }
  return entries;
}

/** `ls -l`-like mode text: type letter and octal permissions. */
export function modeText(entry: Entry): string {
  const type = { dir: "d", file: "-", text: "-", symlink: "l", chardev: "c" }[entry.kind];
  const mode = entry.kind === "symlink" ? 0o777 : entry.mode;
  return `${type}${mode.toString(8).padStart(4, "0")}`;
}

/**
 * The manifest file: one line per entry (mode, size in bytes, path, link
 * target, origin, and the machine of an ELF file when `machineOf` knows
 * it), then the totals. `sizeOf` gives a file entry's size.
 */
export function renderManifest(
  entries: readonly Entry[],
  sizeOf: (entry: Entry) => number,
  totals: readonly (readonly [string, string])[],
  machineOf: (entry: Entry) => string | undefined = () => undefined,
): string {
  const lines = entries.map((e) => {
    const size = String(sizeOf(e)).padStart(10);
    const link = e.kind === "symlink" ? ` -> ${e.target}` : "";
    const from =
      e.kind === "file"
        ? `  [${e.origin}: ${e.source}]`
        : e.kind === "text"
          ? `  [${e.origin}]`
          : e.kind === "chardev"
            ? `  [char ${e.major},${e.minor}]`
            : "";
    const machine = machineOf(e);
    return `${modeText(e)} ${size}  ${e.path}${link}${from}${machine ? `  {${machine}}` : ""}`;
  });
  const width = Math.max(...totals.map(([k]) => k.length));
  return [...lines, "", ...totals.map(([k, v]) => `# ${k.padEnd(width)}  ${v}`), ""].join("\n");
}
