/**
 * The sysctl part of a complete read (src/net/sysctl/sysctl-tree.ts): every
 * readable file below the root by path, in path order, trailing newline
 * dropped, empty and unreadable files left out (as `grep -rs ^` leaves
 * them out, which parseSysctlGrep reads into the same map); and the bound
 * on files, reached with the real constant.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  parseSysctlGrep,
  readSysctlTree,
  SYSCTL_TREE_MAX_FILES,
  SysctlTreeTooLarge,
} from "../../src/net/sysctl/sysctl-tree";
import { type TempDir, tempDir } from "../helpers/tmp";

let dir: TempDir | undefined;
afterEach(() => {
  dir?.remove();
  dir = undefined;
});

function tree(files: Record<string, string>): string {
  dir = tempDir("netagent-sysctl-tree-");
  for (const [path, value] of Object.entries(files)) {
    mkdirSync(join(dir.path, path, ".."), { recursive: true });
    writeFileSync(join(dir.path, path), value);
  }
  return dir.path;
}

describe("readSysctlTree", () => {
  it("reads every file by path, as grep -rs ^ prints them", () => {
    const root = tree({
      "ipv4/conf/eth0/rp_filter": "2\n",
      "ipv4/conf/vnic.a-b_c/rp_filter": "1\n",
      "ipv4/tcp_rmem": "4096\t131072\t6291456\n",
      "ipv4/empty": "",
      "core/two_lines": "a\nb\n",
    });
    const m = readSysctlTree(root);
    expect([...m]).toEqual([
      ["core/two_lines", "a\nb"],
      ["ipv4/conf/eth0/rp_filter", "2"],
      ["ipv4/conf/vnic.a-b_c/rp_filter", "1"],
      ["ipv4/tcp_rmem", "4096\t131072\t6291456"],
    ]);
    const grep = [
      `${root}/core/two_lines:a`,
      `${root}/core/two_lines:b`,
      `${root}/ipv4/conf/eth0/rp_filter:2`,
      `${root}/ipv4/conf/vnic.a-b_c/rp_filter:1`,
      `${root}/ipv4/tcp_rmem:4096\t131072\t6291456`,
      "grep: stray line",
    ].join("\n");
    expect(parseSysctlGrep(grep, root)).toEqual(m);
  });

  it("keeps a value of one page and leaves out a longer one", () => {
    const page = `${"7".repeat(4095)}\n`;
    const root = tree({ "core/page": page, "core/more": `${page}x\n`, "core/after": "1\n" });
    const m = readSysctlTree(root);
    expect(m.get("core/page")).toBe("7".repeat(4095));
    expect(m.has("core/more")).toBe(false);
    expect(m.get("core/after")).toBe("1");
  });

  it("leaves out a file it cannot read", () => {
    const root = tree({ "ipv6/conf/all/stable_secret": "x\n", "ipv6/conf/all/mtu": "1280\n" });
    chmodSync(join(root, "ipv6/conf/all/stable_secret"), 0o000);
    const m = readSysctlTree(root);
    // root reads a 0000 file anyway; either way the readable one is there.
    expect(m.get("ipv6/conf/all/mtu")).toBe("1280");
  });

  it(`reads ${SYSCTL_TREE_MAX_FILES} files and refuses one more`, () => {
    // A tmpfs when there is one: the test writes and reads that many files.
    const shm = existsSync("/dev/shm") ? mkdtempSync("/dev/shm/netagent-sysctl-many-") : undefined;
    dir = shm
      ? {
          path: shm,
          join: (n: string) => join(shm, n),
          remove: () => rmSync(shm, { recursive: true, force: true }),
        }
      : tempDir("netagent-sysctl-many-");
    for (let d = 0; d < 100; d++) {
      mkdirSync(join(dir.path, `d${d}`));
      for (let f = 0; f < SYSCTL_TREE_MAX_FILES / 100; f++)
        writeFileSync(join(dir.path, `d${d}`, `f${f}`), "1\n");
    }
    expect(readSysctlTree(dir.path).size).toBe(SYSCTL_TREE_MAX_FILES);
    writeFileSync(join(dir.path, "one-more"), "1\n");
    expect(() => readSysctlTree(dir?.path)).toThrow(SysctlTreeTooLarge);
    expect(() => readSysctlTree(dir?.path)).toThrow(
      `more than ${SYSCTL_TREE_MAX_FILES} files under`,
    );
  }, 300_000);
});
