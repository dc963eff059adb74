/**
 * diff's bounds, each reached: `--probes` takes 1 to 1,000 (more is exit 2,
 * nothing asked) and asks exactly N when the pod offers more; a guest
 * whose state is larger than one answer cannot be compared: exit 3 saying
 * so, never EQUAL.
 */
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";
import { MirrorPair } from "./complete-helpers";

let m: MirrorPair;
let dir: TempDir;

beforeAll(async () => {
  dir = tempDir("netagent-diff-bounds-");
  m = await MirrorPair.create();
  await m.pod.ip("addr", "add", "10.70.119.194/26", "dev", "eth0");
  // 300 routes: well over 1,000 probes to draw from.
  const lines = Array.from(
    { length: 300 },
    (_, i) => `route add 10.${100 + (i >> 8)}.${i & 255}.0/24 via 10.70.119.193`,
  );
  writeFileSync(dir.join("pod.batch"), `${lines.join("\n")}\n`);
  const r = await run("ip", ["-n", m.pod.name, "-batch", dir.join("pod.batch")]);
  expect(r.code, r.stderr).toBe(0);
  expect((await m.sync()).code).toBe(0);
});

afterAll(async () => {
  await m?.remove();
  dir?.remove();
});

describe("diff --probes", () => {
  it.each([["0"], ["1001"], ["-5"], ["1e3"], ["ten"]])(
    "--probes %s: exit 2, nothing asked",
    async (n) => {
      const r = await m.diff("--probes", n);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`--probes ${JSON.stringify(n)}: not a number from 1 to 1000`);
      expect(r.stdout).toBe("");
    },
  );

  it("asks exactly 1,000 of the pod's many", async () => {
    const r = await m.diff("--json", "--probes", "1000");
    const p = (JSON.parse(r.stdout) as { probes: { asked: number; disagreements: unknown[] } })
      .probes;
    expect(p.asked).toBe(1000);
    expect(p.disagreements).toEqual([]);
  }, 300_000);

  it("needs a pod namespace", async () => {
    writeFileSync(
      dir.join("r.json"),
      JSON.stringify({ cniVersion: "1.0.0", interfaces: [], ips: [] }),
    );
    const r = await m.ctl("diff", "--probes", "10", "--cni-result", dir.join("r.json"));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--probes needs --netns");
  });
});

describe("a guest larger than one answer", () => {
  it("diff cannot compare: exit 3 saying so, never EQUAL", async () => {
    const lines = Array.from(
      { length: 30_000 },
      (_, i) =>
        `route add 10.${200 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 via 10.70.119.193 table 500`,
    );
    writeFileSync(dir.join("guest.batch"), `${lines.join("\n")}\n`);
    const r = await run("ip", ["-n", m.guest.ns.name, "-batch", dir.join("guest.batch")]);
    expect(r.code, r.stderr).toBe(0);
    try {
      const d = await m.diff();
      expect(d.code, d.stdout + d.stderr).toBe(3);
      expect(d.stdout).not.toContain("verdict: EQUAL");
      expect(d.stderr).toMatch(
        /RESOURCE_EXHAUSTED: Read: the guest's state is \d+ bytes, more than one answer carries \(4193280\)/,
      );
    } finally {
      await m.guest.ns.ip("route", "flush", "table", "500");
    }
  }, 300_000);
});
