/**
 * A stand-in `ip`, run by bun as `main.ts CONFIG.json IP-ARGS...` (see
 * config.ts): the fault its configuration names, applied to each exchange
 * the shared loop (exchanges.ts) hands it, with the real iproute2 doing
 * the work in the netns the stand-in inherited.
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { StandinConfig } from "./config";
import { type Exchange, type Handler, runIp, serve } from "./exchanges";

// not a wait: the stand-in's own delays below, each asked for by the test driving it
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Dies as a crashed ip would: SIGKILL, no words, no clean-up. */
function die(): never {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable: SIGKILL did not end the process");
}

/** Nanoseconds since the epoch (bun's hrtime counts from the process's start). */
function now(): bigint {
  const origin = BigInt(Math.round(performance.timeOrigin * 1e3)) * 1000n;
  return origin + BigInt(Math.round(performance.now() * 1e6));
}

function recorder(calls: string): Handler {
  let seq = 0;
  return (x) => {
    // Named by the time it started (sortable across processes), PID, and
    // exchange number, so a listing is in call order.
    const t = now().toString().padStart(20, "0");
    const name = `${t}-${process.pid}-${String(seq++).padStart(6, "0")}`;
    // Written aside and renamed in whole: a test listing the calls while
    // this one is being written (the agent's session starts at its own
    // start) sees it complete or not at all.
    const d = join(`${calls}.partial`, name);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "argv"), x.argv.map((a) => `${a}\0`).join(""));
    writeFileSync(join(d, "stdin"), Buffer.from(x.lines.join(""), "latin1"));
    writeFileSync(join(d, "pid"), String(process.pid));
    mkdirSync(calls, { recursive: true });
    renameSync(d, join(calls, name));
    return runIp(x);
  };
}

function dying(c: Extract<StandinConfig, { kind: "dying" }>): Handler {
  return async (x) => {
    if (!x.write || !existsSync(c.armed) || x.lines.length < c.k) return runIp(x);
    const status = await runIp(x, x.lines.slice(0, c.k - 1));
    if (status !== 0) return status;
    appendFileSync(c.deaths, `${x.index}\n`);
    return die();
  };
}

function gated(c: Extract<StandinConfig, { kind: "gated" }>): Handler {
  return async (x) => {
    if (!x.write) return runIp(x);
    const half = Math.floor(x.lines.length / 2);
    const status = await runIp(x, x.lines.slice(0, half));
    if (status !== 0) return status;
    writeFileSync(c.halfway, String(x.index));
    // not a wait: the poll interval of the stand-in waiting for the test's release file (the test bounds it)
    while (!existsSync(c.release)) await sleep(50);
    return runIp(x, x.lines.slice(half), { offset: half });
  };
}

/** See faulty-ip.ts for what each file arms. */
function faulty(prefix: string): Handler {
  const f = (name: string) => `${prefix}${name}`;
  const take = (name: string) => {
    const text = existsSync(f(name)) ? readFileSync(f(name), "utf8") : "";
    rmSync(f(name), { force: true });
    return text;
  };
  const armReads = () => {
    const n = take("arm-reads");
    if (n) writeFileSync(f("read-fails"), n);
  };
  return async (x: Exchange) => {
    const fails = existsSync(f("read-fails")) ? Number(readFileSync(f("read-fails"), "utf8")) : 0;
    if (x.read && fails > 0) {
      writeFileSync(f("read-fails"), String(fails - 1));
      appendFileSync(f("failed-reads"), "x\n");
      // In a batch, iproute2 names the line (the exchange's first) as it would.
      const where = x.batch ? `Command failed -:${x.base + 1}\n` : "";
      writeSync(2, `Dump was interrupted and may be inconsistent.\n${where}`);
      return 1;
    }
    if (!x.write) return runIp(x);
    const before = take("before");
    if (before) {
      const argv = ["-force", "-batch", "-"];
      await runIp({ ...x, argv, lines: before.split(/(?<=\n)/) }, undefined, { quiet: true });
    }
    const n = x.lines.length;
    if (existsSync(f("wedge"))) {
      rmSync(f("wedge"));
      await runIp(x, x.lines.slice(0, Math.floor(n / 2)), { quiet: true });
      writeFileSync(f("pid"), `${process.pid} ${x.index}`);
      // not a wait: a stand-in for a wedged ip: it never answers, and is killed
      await sleep(600_000);
      return 1;
    }
    const k = Number(take("die") || 0);
    if (k > 0 && n >= k) {
      await runIp(x, x.lines.slice(0, k - 1));
      writeFileSync(f("pid"), `${process.pid} ${x.index}`);
      armReads();
      return die();
    }
    const status = await runIp(x);
    if (status !== 0) armReads();
    return status;
  };
}

function slow(c: Extract<StandinConfig, { kind: "slow" }>): Handler {
  return async (x) => {
    appendFileSync(c.count, "x\n");
    // not a wait: a slow ip, as slow as the test asked
    await sleep(c.ms);
    return runIp(x);
  };
}

function handler(c: StandinConfig): Handler {
  switch (c.kind) {
    case "record":
      return recorder(c.calls);
    case "dying":
      return dying(c);
    case "gated":
      return gated(c);
    case "faulty":
      return faulty(c.prefix);
    case "slow":
      return slow(c);
  }
}

const [, , configPath, ...argv] = process.argv;
if (configPath === undefined) throw new Error("usage: main.ts CONFIG.json IP-ARGS...");
const config = JSON.parse(readFileSync(configPath, "utf8")) as StandinConfig & { log: string };
await serve(argv, config.log, handler(config));
