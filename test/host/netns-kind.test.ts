/**
 * Whether a sandbox's netns path is a network namespace, told with no
 * process (src/host/follow/sandbox-resolve.ts netnsProblem): a real one
 * (a name under /run/netns, made here) is taken; another kind of namespace,
 * a regular file, a FIFO (never opened, so nothing blocks) and a directory
 * are refused naming what they are; a path not there yet is waited for.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { netnsProblem } from "../../src/host/follow/sandbox-resolve";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";

let ns: Netns | undefined;
let dir: TempDir | undefined;
afterEach(async () => {
  await ns?.remove();
  ns = undefined;
  dir?.remove();
  dir = undefined;
});

describe("a sandbox's netns path", () => {
  it("a network namespace is taken; anything else is refused saying what it is", async () => {
    ns = await Netns.create("nnk");
    dir = tempDir("netagent-netns-kind-");
    const file = dir.join("file");
    writeFileSync(file, "");
    const fifo = dir.join("fifo");
    execFileSync("mkfifo", [fifo]);
    const sub = dir.join("dir");
    mkdirSync(sub);

    expect(await netnsProblem(`/run/netns/${ns.name}`)).toBeUndefined();
    const refused = async (path: string) => {
      const r = await netnsProblem(path);
      return r?.kind === "failed" ? r.why : r;
    };
    expect(await refused("/proc/self/ns/mnt")).toBe(
      "/proc/self/ns/mnt is not a network namespace (another kind of namespace)",
    );
    expect(await refused(file)).toBe(
      `${file} is not a network namespace (not a namespace file: errno 25)`,
    );
    expect(await refused(fifo)).toBe(`${fifo} is not a network namespace (not a file)`);
    expect(await refused(sub)).toBe(`${sub} is not a network namespace (not a file)`);
    expect(await netnsProblem(dir.join("later"))).toEqual({
      kind: "waiting",
      why: `netns ${dir.join("later")} is not there (yet)`,
    });
  });
});
