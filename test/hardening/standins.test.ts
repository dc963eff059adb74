/**
 * The stand-in `ip` executables (fake-ip.ts, faulty-ip.ts) driven directly
 * as the agent's resident session drives its ip (`-json -details -batch -`
 * in a fresh netns, exchanges ended by a marker over a pipe) and as its
 * one-shot runs do. Each exchange's documents must arrive while stdin is
 * still open, a failing line must carry iproute2's process-wide line
 * number (checked against the real ip fed the same bytes), and each fault
 * must hit one exchange. Kernel state is read with an independent `ip -n`.
 */
import { existsSync, unlinkSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { Netns } from "../helpers/netns";
import { pidAlive } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";
import { dyingIp, gatedIp, isWriteCall, recordingIp, slowIp } from "./fake-ip";
import { faultyIp } from "./faulty-ip";
import { IpSession, oneShot, SESSION_ARGS } from "./ip-standin/drive";
import { REAL_IP } from "./ip-standin/exchanges";
import { exchangeLog } from "./ip-standin/log";

const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A netns with eth0 (10.1.1.2/24, up) and a directory for a stand-in. */
async function setup(): Promise<{ ns: Netns; dir: TempDir }> {
  const dir = tempDir("netagent-standin-");
  cleanup.push(() => dir.remove());
  const ns = await Netns.create("nt-standin");
  cleanup.push(() => ns.remove());
  await ns.veth("eth0", "peer0");
  await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
  return { ns, dir };
}

function session(ns: Netns, bin: string, args?: readonly string[]): IpSession {
  const s = new IpSession(ns, bin, args);
  cleanup.push(() => s.child.kill());
  return s;
}

const replace = (net: string, via = "10.1.1.1") => `route replace ${net} via ${via} dev eth0`;
/** A gateway the kernel refuses: not on any link. */
const BAD = replace("203.0.113.0/24", "172.31.9.9");

/** Destinations via a gateway in the main table, read independently. */
async function gatewayRoutes(ns: Netns): Promise<string[]> {
  const routes = await ns.json<{ dst: string; gateway?: string }[]>("route", "show");
  return routes
    .filter((r) => r.gateway)
    .map((r) => r.dst)
    .sort();
}

const dsts = (doc: unknown) => (doc as { dst: string }[]).map((r) => r.dst);

describe("recordingIp", () => {
  it("a session: each exchange answered before stdin closes, recorded once with the session's PID; a failing line numbered as iproute2 numbers it", async () => {
    const { ns, dir } = await setup();
    const recorder = recordingIp(dir);
    const exchanges = [
      ["link show"],
      [replace("10.9.0.0/16"), "route show table all"],
      [replace("10.8.0.0/16"), BAD, "route show"],
    ];
    const s = session(ns, recorder.bin);
    const [links] = await s.exchange(exchanges[0] as string[]);
    expect((links as { ifname: string }[]).map((l) => l.ifname)).toContain("eth0");
    const [routes] = await s.exchange(exchanges[1] as string[]);
    expect(dsts(routes)).toContain("10.9.0.0/16");
    expect(await gatewayRoutes(ns)).toEqual(["10.9.0.0/16"]);
    expect(s.child.running).toBe(true);
    const exit = await s.lastExchange(exchanges[2] as string[]);
    expect(exit).toEqual({ code: 1, signal: null });
    // 2 + 3 lines before, the bad route second in its exchange.
    expect(s.child.stderr).toMatch(/^Error: Nexthop has invalid gateway\.\nCommand failed -:7\n$/);
    expect(s.docs()).toHaveLength(2);
    expect(await gatewayRoutes(ns)).toEqual(["10.8.0.0/16", "10.9.0.0/16"]);

    // The real iproute2 fed the same bytes in a fresh netns says the same.
    const real = await setup();
    const r = session(real.ns, REAL_IP);
    for (const x of exchanges) r.send(x);
    const realExit = await r.close();
    expect(realExit).toEqual(exit);
    expect(r.child.stderr).toBe(s.child.stderr);
    expect(r.docs()).toHaveLength(2);

    const calls = recorder.calls();
    expect(calls.map((c) => c.stdin)).toEqual(exchanges.map((x) => `${x.join("\n")}\n`));
    expect(calls.map((c) => c.pid)).toEqual([s.pid, s.pid, s.pid]);
    expect(calls.map((c) => c.argv)).toEqual([SESSION_ARGS, SESSION_ARGS, SESSION_ARGS]);
    expect(calls.map(isWriteCall)).toEqual([false, true, true]);
  }, 60_000);

  it("one-shot runs: stdin closed without a marker, -force, a plain command; one record each", async () => {
    const { ns, dir } = await setup();
    const recorder = recordingIp(dir);
    const batch = await oneShot(
      ns,
      recorder.bin,
      SESSION_ARGS,
      `${replace("10.9.0.0/16")}\naddr show\n`,
    );
    expect(batch).toMatchObject({ code: 0, signal: null, stderr: "" });
    expect(JSON.parse(batch.stdout)).toEqual(expect.arrayContaining([expect.anything()]));
    const forced = await oneShot(
      ns,
      recorder.bin,
      ["-force", "-batch", "-"],
      `${BAD}\n${replace("10.7.0.0/16")}\n`,
    );
    // -force: the line after the failure still runs; ip still exits 1.
    expect(forced.code).toBe(1);
    expect(forced.stderr).toMatch(/Command failed -:1\n$/);
    const plain = await oneShot(ns, recorder.bin, ["-json", "route", "show"]);
    expect(plain.code).toBe(0);
    expect(dsts(JSON.parse(plain.stdout))).toContain("10.7.0.0/16");
    expect(await gatewayRoutes(ns)).toEqual(["10.7.0.0/16", "10.9.0.0/16"]);
    const calls = recorder.calls();
    expect(calls.map((c) => [c.argv.join(" "), c.stdin])).toEqual([
      [SESSION_ARGS.join(" "), `${replace("10.9.0.0/16")}\naddr show\n`],
      ["-force -batch -", `${BAD}\n${replace("10.7.0.0/16")}\n`],
      ["-json route show", ""],
    ]);
    expect(new Set(calls.map((c) => c.pid)).size).toBe(3);
    expect(calls.map(isWriteCall)).toEqual([true, true, false]);
  }, 60_000);
});

describe("dyingIp", () => {
  it("reads and short writes pass; a write of k lines or more applies k-1 and is killed; disarmed it passes", async () => {
    const { ns, dir } = await setup();
    const dying = dyingIp(dir, 3);
    const s = session(ns, dying.bin);
    await s.exchange(["link show"]);
    await s.exchange([replace("10.9.0.0/16"), "route show table all"]);
    const nets = ["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16", "10.4.0.0/16"];
    const exit = await s.lastExchange([...nets.map((n) => replace(n)), "route show"]);
    expect(exit).toEqual({ code: null, signal: "SIGKILL" });
    expect(dying.deaths()).toBe(1);
    expect(dying.answeredBeforeDeath()).toEqual([2]);
    expect(s.docs()).toHaveLength(2);
    expect(await gatewayRoutes(ns)).toEqual(["10.1.0.0/16", "10.2.0.0/16", "10.9.0.0/16"]);
    // A restore (-force) is not a write: it passes while armed.
    const restore = nets.map((n) => `route del ${n}`).join("\n");
    expect((await oneShot(ns, dying.bin, ["-force", "-batch", "-"], `${restore}\n`)).code).toBe(1);
    expect(await gatewayRoutes(ns)).toEqual(["10.9.0.0/16"]);
    unlinkSync(dying.armed);
    const all = `${nets.map((n) => replace(n)).join("\n")}\n`;
    expect((await oneShot(ns, dying.bin, ["-batch", "-"], all)).code).toBe(0);
    expect(await gatewayRoutes(ns)).toEqual([...nets, "10.9.0.0/16"]);
    expect(dying.deaths()).toBe(1);
  }, 60_000);

  it("one-shot: the whole stdin is one write, killed on its line k", async () => {
    const { ns, dir } = await setup();
    const dying = dyingIp(dir, 2);
    const r = await oneShot(
      ns,
      dying.bin,
      ["-batch", "-"],
      `${replace("10.1.0.0/16")}\n${replace("10.2.0.0/16")}\n`,
    );
    expect(r.signal).toBe("SIGKILL");
    expect(dying.answeredBeforeDeath()).toEqual([0]);
    expect(await gatewayRoutes(ns)).toEqual(["10.1.0.0/16"]);
  }, 60_000);
});

describe("gatedIp", () => {
  it("a write stops halfway until released, then answers in the same session; a later failure keeps iproute2's line number", async () => {
    const { ns, dir } = await setup();
    const gated = gatedIp(dir);
    const s = session(ns, gated.bin);
    await s.exchange(["link show"]);
    const nets = ["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16", "10.4.0.0/16"];
    s.send([...nets.map((n) => replace(n)), "route show"]);
    await waitFor(() => existsSync(gated.halfway), { what: "halfway" });
    // 5 lines, the first 2 applied, nothing answered yet.
    expect(await gatewayRoutes(ns)).toEqual(nets.slice(0, 2));
    expect(s.docs()).toHaveLength(1);
    expect(s.child.running).toBe(true);
    writeFileSync(gated.release, "");
    await waitFor(() => s.docs().length === 2, { what: "the released exchange's answer" });
    expect(dsts(s.docs()[1])).toEqual(expect.arrayContaining(nets));
    expect(await gatewayRoutes(ns)).toEqual(nets);
    // Lines so far: 2 + 6; the bad route is the 3rd (in the second half) of the next.
    const exit = await s.lastExchange([
      replace("10.5.0.0/16"),
      replace("10.6.0.0/16"),
      BAD,
      "route show",
    ]);
    expect(exit.code).toBe(1);
    expect(s.child.stderr).toMatch(/Command failed -:11\n$/);
    expect(await gatewayRoutes(ns)).toEqual([...nets, "10.5.0.0/16", "10.6.0.0/16"]);
  }, 60_000);
});

describe("faultyIp", () => {
  it("a wedged write: half applied, no answer, the PID the session's; killed by PID", async () => {
    const { ns, dir } = await setup();
    const ip = faultyIp(dir);
    const s = session(ns, ip.bin);
    await s.exchange(["link show"]);
    ip.wedgeNextWrite();
    const nets = ["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16", "10.4.0.0/16"];
    s.send([...nets.map((n) => replace(n)), "route show"]);
    const pid = await waitFor(() => ip.faultPid(), { what: "the wedge" });
    expect(pid).toBe(s.pid);
    expect(ip.faultAfter()).toBe(1);
    expect(await gatewayRoutes(ns)).toEqual(nets.slice(0, 2));
    expect(s.docs()).toHaveLength(1);
    expect(pidAlive(pid)).toBe(true);
    process.kill(pid, "SIGKILL");
    expect(await s.close()).toEqual({ code: null, signal: "SIGKILL" });
  }, 60_000);

  it("dies on line k of a session's write, then the next read fails (in a session: on its first line)", async () => {
    const { ns, dir } = await setup();
    const ip = faultyIp(dir);
    const s = session(ns, ip.bin);
    await s.exchange(["link show"]);
    ip.dieOnLine(2);
    ip.failReadsAfterFailedWrite(2);
    const exit = await s.lastExchange([
      replace("10.1.0.0/16"),
      replace("10.2.0.0/16"),
      "route show",
    ]);
    expect(exit.signal).toBe("SIGKILL");
    expect(ip.faultPid()).toBe(s.pid);
    expect(ip.faultAfter()).toBe(1);
    expect(await gatewayRoutes(ns)).toEqual(["10.1.0.0/16"]);
    // One-shot read: fails.
    const read = await oneShot(ns, ip.bin, ["-json", "route", "show"]);
    expect(read).toMatchObject({
      code: 1,
      stderr: "Dump was interrupted and may be inconsistent.\n",
    });
    // A session: a write passes (reads fail, not writes), then its read fails.
    const t = session(ns, ip.bin);
    await t.exchange([replace("10.2.0.0/16"), "route show"]);
    expect((await t.lastExchange(["addr show"])).code).toBe(1);
    expect(t.child.stderr).toMatch(/^Dump was interrupted.*\nCommand failed -:4\n$/);
    expect(ip.failedReads()).toBe(2);
    // Spent: reads pass again.
    const u = session(ns, ip.bin);
    await u.exchange(["addr show"]);
    expect(await u.close()).toEqual({ code: 0, signal: null });
  }, 60_000);

  it("a failed write arms failing reads; commands run before the next write, not before a read", async () => {
    const { ns, dir } = await setup();
    const ip = faultyIp(dir);
    await ns.ip("route", "add", "10.9.0.0/16", "via", "10.1.1.1");
    ip.failReadsAfterFailedWrite(1);
    ip.beforeNextWrite(["route del 10.9.0.0/16"]);
    const s = session(ns, ip.bin);
    await s.exchange(["route show"]);
    expect(await gatewayRoutes(ns)).toEqual(["10.9.0.0/16"]);
    const [routes] = await s.exchange([replace("10.7.0.0/16"), "route show"]);
    expect(dsts(routes)).toEqual(expect.arrayContaining(["10.7.0.0/16"]));
    expect(dsts(routes)).not.toContain("10.9.0.0/16");
    expect(ip.failedReads()).toBe(0);
    expect((await s.lastExchange([BAD, "route show"])).code).toBe(1);
    expect(s.child.stderr).toMatch(/Command failed -:6\n$/);
    const read = await oneShot(ns, ip.bin, SESSION_ARGS, "route show\n");
    expect(read.stderr).toBe("Dump was interrupted and may be inconsistent.\nCommand failed -:1\n");
    expect(ip.failedReads()).toBe(1);
    expect((await oneShot(ns, ip.bin, SESSION_ARGS, "route show\n")).code).toBe(0);
  }, 60_000);
});

describe("slowIp", () => {
  it("counts exchanges, not processes; the exchange log says which process served each", async () => {
    const { ns, dir } = await setup();
    const slow = slowIp(dir, 10);
    const s = session(ns, slow.bin);
    for (let i = 0; i < 3; i++) await s.exchange(["link show"]);
    expect(await s.close()).toEqual({ code: 0, signal: null });
    await oneShot(ns, slow.bin, ["-json", "link", "show"]);
    expect(slow.exchanges()).toBe(4);
    // Every stand-in logs its exchanges: PID, and how many that process served before.
    const log = exchangeLog(slow.bin);
    expect(log.slice(0, 3)).toEqual([0, 1, 2].map((index) => ({ pid: s.pid, index })));
    expect(log[3]?.index).toBe(0);
    expect(log[3]?.pid).not.toBe(s.pid);
  }, 60_000);
});
