/**
 * The resident ip session (src/net/iproute/ip-session.ts) against the real
 * iproute2 in a fresh netns: several exchanges on one process, a failed
 * line named within its exchange and the process replaced, nothing after
 * the failed line applied, and the name cache iproute2 keeps for a
 * process's life never acting on a link renamed behind its back. Results
 * are read with an independent `ip -n NS -json`.
 */
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { codeOfNetError } from "../../src/common/error-status";
import { SESSION_MAX_LINES } from "../../src/net/iproute/ip-dispatch";
import { IpRunner } from "../../src/net/iproute/ip-runner";
import { IpSession, MAX_KEPT_STDERR } from "../../src/net/iproute/ip-session";
import type { NetError } from "../../src/net/model/net-error";
import { failedBatchLine } from "../../src/net/parse/ip-errors";
import { Code } from "../../src/ttrpc/codes";
import { Netns } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** The real ip, entered into `ns` (the agent's session runs in its own netns). */
function ipIn(dir: TempDir, ns: Netns): string {
  const bin = dir.join("ip-in-ns");
  writeFileSync(bin, `#!/bin/sh\nexec ip -n '${ns.name}' "$@"\n`);
  chmodSync(bin, 0o755);
  return bin;
}

async function setup() {
  const dir = tempDir("netagent-session-");
  cleanup.push(() => dir.remove());
  const ns = await Netns.create("nt-ses");
  cleanup.push(() => ns.remove());
  await ns.veth("eth0", "peer0");
  await ns.veth("eth1", "peer1");
  await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
  await ns.ip("addr", "add", "10.2.2.2/24", "dev", "eth1");
  const bin = ipIn(dir, ns);
  const session = new IpSession(bin);
  cleanup.push(() => session.close());
  const run = (lines: string[], reads: number) =>
    session.exchange(lines, reads, { timeoutMs: 30_000 });
  const routeDev = async (dst: string) =>
    (await ns.json<{ dst: string; dev: string }[]>("route", "show", "table", "main")).find(
      (r) => r.dst === dst,
    )?.dev;
  return { ns, bin, session, run, routeDev };
}

describe("IpSession", () => {
  it("answers exchange after exchange from one process", async () => {
    const { session, run, routeDev } = await setup();
    for (let i = 1; i <= 5; i++) {
      const r = await run([`route replace 10.9.${i}.0/24 via 10.1.1.1 dev eth0`, "route show"], 1);
      expect(r.exitCode).toBe(0);
      const routes = JSON.parse(r.stdout) as { dst: string }[];
      expect(routes.map((x) => x.dst)).toContain(`10.9.${i}.0/24`);
      expect(await routeDev(`10.9.${i}.0/24`)).toBe("eth0");
    }
    const docs = (await run(["addr show", "route show", "neigh show"], 3)).stdout.split("\n");
    expect(docs.map((d) => Array.isArray(JSON.parse(d)))).toEqual([true, true, true]);
    expect(session.started).toBe(1);
  });

  it("names the failed line within its exchange, applies nothing after it, and starts afresh", async () => {
    const { session, run, routeDev } = await setup();
    await run(["route replace 10.9.1.0/24 via 10.1.1.1 dev eth0", "route show"], 1);
    await run(["addr show"], 1);
    const r = await run(
      [
        "route replace 10.9.2.0/24 via 10.1.1.1 dev eth0",
        "route replace 10.9.3.0/24 via 10.1.1.1 dev nosuchdev",
        "route replace 10.9.4.0/24 via 10.1.1.1 dev eth0",
        "route show",
      ],
      1,
    );
    expect(r.exitCode).not.toBe(0);
    expect(failedBatchLine(r.stderr)).toBe(1);
    expect(r.stderr).toMatch(/nosuchdev/);
    expect(await routeDev("10.9.2.0/24")).toBe("eth0");
    expect(await routeDev("10.9.4.0/24")).toBeUndefined();
    const after = await run(["route replace 10.9.5.0/24 via 10.1.1.1 dev eth0", "route show"], 1);
    expect(after.exitCode).toBe(0);
    expect(await routeDev("10.9.5.0/24")).toBe("eth0");
    expect(session.started).toBe(2);
  });

  it("never acts on a link by a name it had before someone else renamed it", async () => {
    const { ns, session, run, routeDev } = await setup();
    // The process lists (and caches) the links; then another tool swaps the names.
    await run(["addr show", "route show"], 2);
    // not a wait: past LISTING_TRUSTED_MS (100 ms) after the last listing, as a later call
    // comes, so the session checks its names first; load only lengthens it
    await new Promise((r) => setTimeout(r, 150));
    await ns.ip("link", "set", "eth0", "name", "ethtmp");
    await ns.ip("link", "set", "eth1", "name", "eth0");
    await ns.ip("link", "set", "ethtmp", "name", "eth1");
    const r = await run(["route replace 10.9.9.0/24 dev eth0", "route show"], 1);
    expect(r.exitCode).toBe(0);
    const eth0 = (await ns.json<{ ifname: string; ifindex: number }[]>("link", "show", "eth0"))[0];
    const dumped = await ns.json<{ dst: string; dev: string }[]>("route", "show", "table", "main");
    // The route is on the link called eth0 now (the old eth1), read by a fresh ip.
    expect(await routeDev("10.9.9.0/24")).toBe("eth0");
    expect(eth0?.ifname).toBe("eth0");
    // And the session's own read-back names the links as the kernel does now.
    const own = JSON.parse(r.stdout) as { dst: string; dev: string }[];
    expect(own.map((x) => `${x.dst} ${x.dev}`).sort()).toEqual(
      dumped.map((x) => `${x.dst} ${x.dev}`).sort(),
    );
    expect(session.started).toBe(2);
  });

  it("reads the links afresh when they were renamed since its last listing", async () => {
    const { ns, session, run } = await setup();
    await run(["addr show", "route show"], 2);
    // not a wait: past LISTING_TRUSTED_MS (100 ms) after the last listing, as a later call
    // comes, so the session checks its names first; load only lengthens it
    await new Promise((r) => setTimeout(r, 150));
    await ns.ip("link", "set", "eth0", "name", "ethtmp");
    await ns.ip("link", "set", "eth1", "name", "eth0");
    await ns.ip("link", "set", "ethtmp", "name", "eth1");
    const r = await run(["addr show", "route show"], 2);
    const routes = JSON.parse(r.stdout.split("\n")[1] as string) as { dst: string; dev: string }[];
    const dumped = await ns.json<{ dst: string; dev: string }[]>("route", "show", "table", "main");
    expect(routes.map((x) => `${x.dst} ${x.dev}`).sort()).toEqual(
      dumped.map((x) => `${x.dst} ${x.dev}`).sort(),
    );
    expect(routes.find((x) => x.dst === "10.1.1.0/24")?.dev).toBe("eth1");
    expect(session.started).toBe(2);
  });
});

describe("IpSession: links added, removed, renamed by a one-shot; a process killed or stuck", () => {
  it("keeps its process when a link is only added (a hot-plugged NIC)", async () => {
    const { ns, session, run, routeDev } = await setup();
    await run(["addr show", "route show"], 2);
    await ns.veth("eth2", "peer2");
    await ns.ip("addr", "add", "10.3.3.2/24", "dev", "eth2");
    await run(["addr show", "route show"], 2);
    // not a wait: past LISTING_TRUSTED_MS (100 ms) after the last listing, as a later call
    // comes, so the session checks its names first; load only lengthens it
    await new Promise((r) => setTimeout(r, 150));
    const r = await run(["route replace 10.9.7.0/24 via 10.3.3.1 dev eth2", "route show"], 1);
    expect(r.exitCode).toBe(0);
    expect(await routeDev("10.9.7.0/24")).toBe("eth2");
    expect(session.started).toBe(1);
  });

  it("starts afresh once a link was removed: a new link taking its name is found", async () => {
    const { ns, session, run, routeDev } = await setup();
    await run(["addr show", "route show"], 2);
    await ns.ip("link", "del", "eth1");
    await ns.veth("nic9", "peer9");
    // not a wait: past LISTING_TRUSTED_MS (100 ms) after the last listing, as a later call
    // comes, so the session checks its names first; load only lengthens it
    await new Promise((r) => setTimeout(r, 150));
    // The agent's own rename into the gone link's name, then a route on it, in one batch.
    const r = await run(
      ["link set dev nic9 name eth1", "route replace 10.9.6.0/24 dev eth1", "addr show"],
      1,
    );
    expect(r.stderr).toBe("");
    expect(r.exitCode).toBe(0);
    expect(await routeDev("10.9.6.0/24")).toBe("eth1");
    expect(session.started).toBe(2);
  });

  it("replaces a process killed by someone else while idle, for reads and changes", async () => {
    const { session, run, routeDev } = await setup();
    for (const lines of [["addr show"], ["route replace 10.9.3.0/24 dev eth0", "route show"]]) {
      await run(["addr show"], 1);
      const pid = session.pid as number;
      process.kill(pid, "SIGKILL");
      await waitFor(() => !existsSync(`/proc/${pid}`), { what: `ip ${pid} gone` });
      const r = await run(lines, 1);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(session.pid).not.toBe(pid);
    }
    expect(await routeDev("10.9.3.0/24")).toBe("eth0");
  });

  it("checks the links before a change that follows a one-shot restore's renames", async () => {
    const { bin, session, routeDev } = await setup();
    const runner = new IpRunner({ binary: bin, session });
    await runner.readLinks();
    // A -force restore runs one-shot; the session's process did not make its renames.
    await runner.batch(
      [
        "link set dev eth0 name ethtmp",
        "link set dev eth1 name eth0",
        "link set dev ethtmp name eth1",
      ],
      { force: true },
    );
    await runner.batchThenRoutes(["route replace 10.9.9.0/24 dev eth0"]);
    expect(await routeDev("10.9.9.0/24")).toBe("eth0");
    expect(session.started).toBe(2);
  });

  it("checks the links before a change that follows a one-shot whole-state batch's renames", async () => {
    const { bin, session, routeDev } = await setup();
    const runner = new IpRunner({ binary: bin, session });
    await runner.readLinks();
    // Over SESSION_MAX_LINES lines: batchAndRead runs one-shot, not in the session.
    const filler = Array.from({ length: SESSION_MAX_LINES }, () => "link set dev lo up");
    await runner.batchAndRead([
      ...filler,
      "link set dev eth0 name ethtmp",
      "link set dev eth1 name eth0",
      "link set dev ethtmp name eth1",
    ]);
    await runner.batchThenRoutes(["route replace 10.9.9.0/24 dev eth0"]);
    expect(await routeDev("10.9.9.0/24")).toBe("eth0");
  });

  it("kills a process that outlives the exchange's time, and the next exchange starts another", async () => {
    const { session, run } = await setup();
    await run(["addr show"], 1);
    // A show line the process answers, then one it cannot: it waits for more input.
    const r = await session.exchange(["route show"], 2, { timeoutMs: 300 });
    expect(r.killed?.message).toMatch(/killed \(SIGKILL\) after 300 ms/);
    const again = await run(["route show"], 1);
    expect(again.exitCode).toBe(0);
    expect(session.started).toBe(2);
  });
});

describe("IpSession: a missing binary, warnings, a cancelled call", () => {
  it("says it cannot run a missing binary (INTERNAL, naming it), and runs once it is there", async () => {
    const { ns } = await setup();
    const dir = tempDir("netagent-session-missing-");
    cleanup.push(() => dir.remove());
    const bin = dir.join("ip");
    const session = new IpSession(bin);
    cleanup.push(() => session.close());
    const r = await session.exchange(["link show"], 1, { timeoutMs: 5_000 });
    expect(r.killed?.kind).toBe("internal");
    expect(codeOfNetError(r.killed as NetError)).toBe(Code.INTERNAL);
    expect(r.killed?.message).toContain(`cannot run ${bin}`);
    writeFileSync(bin, `#!/bin/sh\nexec ip -n '${ns.name}' "$@"\n`);
    chmodSync(bin, 0o755);
    expect((await session.exchange(["link show"], 1, { timeoutMs: 5_000 })).exitCode).toBe(0);
  });

  it("keeps at most MAX_KEPT_STDERR of a process's warnings however many exchanges print some", async () => {
    const { ns } = await setup();
    const dir = tempDir("netagent-session-");
    cleanup.push(() => dir.remove());
    // The real ip, fed through a loop that prints a 4 KiB warning per line it passes on.
    const bin = dir.join("ip-warns");
    writeFileSync(
      bin,
      `#!/bin/bash\nexec ip -n '${ns.name}' "$@" < <(while IFS= read -r l; do printf '%s\\n' "$l"; printf 'Warning: %04096d\\n' 0 >&2; done)\n`,
    );
    chmodSync(bin, 0o755);
    const session = new IpSession(bin);
    cleanup.push(() => session.close());
    let most = 0;
    for (let i = 0; i < 60; i++) {
      const r = await session.exchange(["link show", "route show"], 2, { timeoutMs: 30_000 });
      expect(r.exitCode).toBe(0);
      most = Math.max(most, session.stderrKept);
    }
    expect(session.started).toBe(1);
    // 60 exchanges x 3 lines x ~4 KiB (~740 KB) were printed; what is held
    // stays near the bound. Warnings come on their own pipe and may arrive
    // exchanges late (under load), so "near" allows the bound again.
    expect(most).toBeGreaterThan(MAX_KEPT_STDERR / 2);
    expect(most).toBeLessThanOrEqual(2 * MAX_KEPT_STDERR);
  });

  it("kills the process when the call is cancelled", async () => {
    const { session } = await setup();
    const ac = new AbortController();
    const pending = session.exchange(["route show"], 2, { timeoutMs: 30_000, signal: ac.signal });
    // Cancelled while the exchange waits for a second document that never comes.
    await waitFor(() => session.busy, { what: "the exchange under way" });
    ac.abort(new Error("gone"));
    const r = await pending;
    expect(r.killed?.message).toMatch(/call cancelled/);
    expect(session.busy).toBe(false);
  });
});

describe("IpSession as ip -6 (IPv6 rules, nexthop objects and listings)", () => {
  async function setup6() {
    const s = await setup();
    await s.ns.ip("-6", "addr", "add", "2001:db8:1::2/64", "dev", "eth0", "nodad");
    await s.ns.ip("-6", "addr", "add", "2001:db8:2::2/64", "dev", "eth1", "nodad");
    await s.ns.ip("-6", "rule", "add", "from", "2001:db8:7::/48", "table", "7", "pref", "700");
    await s.ns.ip("-6", "route", "add", "2001:db8:9::/48", "via", "2001:db8:1::1", "dev", "eth0");
    const session6 = new IpSession(s.bin, true);
    cleanup.push(() => session6.close());
    const run6 = (lines: string[]) => session6.exchange(lines, lines.length, { timeoutMs: 30_000 });
    return { ...s, session6, run6 };
  }
  const dev6 = (stdout: string, dst: string) =>
    (JSON.parse(stdout) as { dst: string; dev: string }[]).find((r) => r.dst === dst)?.dev;

  it("lists what a one-shot `ip -6` lists, exchange after exchange from one process", async () => {
    const { ns, session6, run6 } = await setup6();
    // Rules and the route added are compared whole; the kernel's own routes come and go
    // (link-local ones as links come up), so of the routes only that one.
    const lines = ["rule show", "route show table all"];
    const added = (doc: unknown) =>
      (doc as { dst: string }[]).find((r) => r.dst === "2001:db8:9::/48");
    for (let i = 0; i < 3; i++) {
      const r = await run6(lines);
      expect(r.exitCode).toBe(0);
      const [rules, routes] = r.stdout.split("\n").map((d) => JSON.parse(d));
      expect(rules).toEqual(await ns.json("-6", "rule", "show"));
      expect(added(routes)).toEqual(added(await ns.json("-6", "route", "show", "table", "all")));
      expect(added(routes)).toMatchObject({ gateway: "2001:db8:1::1", dev: "eth0" });
    }
    const rules = JSON.parse((await run6(["rule show"])).stdout) as { priority: number }[];
    expect(rules.map((x) => x.priority)).toContain(700);
    expect(session6.started).toBe(1);
  });

  it("names links by their names now after they were renamed under it (its names checked first)", async () => {
    const { ns, session6, run6 } = await setup6();
    expect(dev6((await run6(["route show table all"])).stdout, "2001:db8:9::/48")).toBe("eth0");
    // not a wait: past LISTING_TRUSTED_MS (100 ms) after its last check, as a later call comes
    await new Promise((r) => setTimeout(r, 150));
    await ns.ip("link", "set", "eth0", "name", "ethtmp");
    await ns.ip("link", "set", "eth1", "name", "eth0");
    await ns.ip("link", "set", "ethtmp", "name", "eth1");
    expect(dev6((await run6(["route show table all"])).stdout, "2001:db8:9::/48")).toBe("eth1");
    expect(session6.started).toBe(2);
  });

  it("an agent's runner: Read's IPv6 listings and the IPv6 rules go to it, the others to the other session", async () => {
    const { ns, bin, session } = await setup6();
    const session6 = new IpSession(bin, true);
    cleanup.push(() => session6.close());
    const runner = new IpRunner({ binary: bin, session, session6 });
    const rules = await runner.readRules6();
    expect(rules.some((r) => r.priority === 700)).toBe(true);
    const full = await runner.readFullState();
    expect(full.rules.filter((r) => r.family === 6).map((r) => r.priority)).toContain(700);
    expect(session6.started).toBe(1);
    expect(session.started).toBe(1);
    // A change through the other session renames a link: the IPv6 one checks its names after it.
    await runner.batch([
      "link set eth0 name ethtmp",
      "link set eth1 name eth0",
      "link set ethtmp name eth1",
    ]);
    const r = await runner.runListings(["route show table all"], { ipv6: true });
    expect(dev6(r.stdout, "2001:db8:9::/48")).toBe("eth1");
    const [own] = await ns.json<{ dst: string; dev: string }[]>(
      "-6",
      "route",
      "show",
      "2001:db8:9::/48",
    );
    expect(own?.dev).toBe("eth1");
  });
});
