/**
 * Process plumbing for the rows: RSS from /proc, a Check probe over a fresh
 * unix connection, the compiled floor program. Processes are stopped only
 * by their own PID.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** dist/netagent, or $NETAGENT_BIN (another build), as test/helpers/agent.ts and bench/ttrpc take it. */
export const NETAGENT = process.env.NETAGENT_BIN ?? join(ROOT, "dist/netagent");
export const FLOOR = join(ROOT, "dist/bench-floor");
export const BUN = join(ROOT, "node_modules/.bin/bun");

/** grpc.Health/Check on stream 1 with an empty CheckRequest. */
export const CHECK_FRAME = (() => {
  const body = Buffer.concat([
    Buffer.from([0x0a, 11]),
    Buffer.from("grpc.Health"),
    Buffer.from([0x12, 5]),
    Buffer.from("Check"),
  ]);
  const h = Buffer.alloc(10);
  h.writeUInt32BE(body.length, 0);
  h.writeUInt32BE(1, 4);
  h[8] = 1;
  return Buffer.concat([h, body]);
})();

export function statusKiB(
  pid: number,
  field: "VmRSS" | "VmHWM" | "RssAnon" | "RssFile" | "RssShmem",
): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no ${field} for ${pid}`);
  return Number(m[1]);
}

export const rssKiB = (pid: number) => statusKiB(pid, "VmRSS");
export const hwmKiB = (pid: number) => statusKiB(pid, "VmHWM");

/** Resets VmHWM to the current RSS (clear_refs 5, Linux >= 4.0). */
export function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

/** One Check over a fresh connection; true on a Response for stream 1. */
export function tryCheck(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    let got = Buffer.alloc(0);
    s.on("error", () => resolve(false));
    s.on("close", () => resolve(false));
    s.on("connect", () => s.write(CHECK_FRAME));
    s.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length >= 10 && got.length >= 10 + got.readUInt32BE(0)) {
        s.destroy();
        resolve(got[8] === 2 && got.readUInt32BE(4) === 1);
      }
    });
  });
}

/** Retries a Check every millisecond until one is answered or `alive()` says the process is gone. */
export async function untilCheck(path: string, alive: () => boolean): Promise<void> {
  for (;;) {
    if (!alive()) throw new Error(`server for ${path} exited before answering`);
    if (await tryCheck(path)) return;
    await Bun.sleep(1);
  }
}

/** Compiles bench/floor/floor.ts to dist/bench-floor when missing or older than its source. */
export function buildFloor(): string {
  const src = join(ROOT, "bench/floor/floor.ts");
  if (existsSync(FLOOR) && statSync(FLOOR).mtimeMs >= statSync(src).mtimeMs) return FLOOR;
  execFileSync(
    BUN,
    ["build", "--compile", "--minify", "--sourcemap=none", src, "--outfile", FLOOR],
    { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] },
  );
  return FLOOR;
}
