/**
 * The change journal: before a network change makes its first change, the
 * agent writes what puts the old state back into one record in its state
 * directory (`--state-dir`, default /run/netagent: tmpfs, which outlives the
 * agent but not the VM); once the change is complete or rolled back the
 * record is removed. A starting agent that finds one restores from it
 * (recover.ts). Cost of a change that does not fail: one small write (a file
 * created, written, closed) and one unlink; a call that changes nothing
 * writes nothing.
 *
 * Safe by construction: the directory is root's alone (0700, refused if it
 * is anything else), a record is acted on whole or not at all (the header's
 * length and checksum refuse a torn one: record-file.ts; one that replaces
 * another goes through a rename), bounded ({@link MAX_RECORD_BYTES}: a change
 * whose record would be larger is refused before it starts, a larger file is
 * never read), and a record that does not decode or parse, or is of another
 * boot, is set aside (renamed to rejected.rec, one slot) and never applied.
 * No fsync: the record must outlive the process, not the machine.
 */
import {
  closeSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { MAX_RECORD_BYTES } from "../../common/limits";
import type { Logger } from "../../common/log";
import { Code, TtrpcError } from "../../ttrpc/codes";
import {
  type Change,
  type ChangeRecord,
  parseChangeRecord,
  type RecordOwner,
} from "./change-record";
import { stillRunning } from "./proc-stat";
import { decodeRecord, encodeRecord, MAX_HEADER_BYTES } from "./record-file";

/** A state directory that is not the agent's own: main exits 2 with this. */
export class StateDirError extends Error {
  override readonly name = "StateDirError";
}

export interface JournalOptions {
  dir: string;
  log: Logger;
  owner: RecordOwner;
  bootId: string;
  netns: string;
  maxBytes?: number;
}

/** What a starting agent finds in its state directory. */
export type Found =
  | { kind: "none" }
  /** A record to restore from. */
  | { kind: "record"; record: ChangeRecord; bytes: number }
  /** Not to be applied: moved to rejected.rec. */
  | { kind: "set-aside"; reason: string }
  /** Not this agent's to touch (another namespace's, or its writer still runs): left in place. */
  | { kind: "left"; reason: string };

export class Journal {
  readonly dir: string;
  readonly maxBytes: number;
  private readonly record: string;
  private readonly temp: string;
  private readonly rejected: string;
  /** A record whose removal failed: it must go before another is written. */
  private stale = false;

  private constructor(private readonly options: JournalOptions) {
    this.dir = options.dir;
    this.maxBytes = options.maxBytes ?? MAX_RECORD_BYTES;
    this.record = join(this.dir, "change.rec");
    this.temp = join(this.dir, "change.tmp");
    this.rejected = join(this.dir, "rejected.rec");
  }

  /**
   * Makes the state directory (mode 0700) or checks that it is a directory
   * of this user's that no one else may read or write (a symlink, another
   * owner or any group/other bit: StateDirError). Removes a temporary file a
   * killed write left.
   */
  static open(options: JournalOptions): Journal {
    const j = new Journal(options);
    try {
      mkdirSync(j.dir, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
        throw new StateDirError(`state dir ${j.dir}: ${(err as Error).message}`);
      }
    }
    const s = lstatSync(j.dir);
    const uid = process.getuid?.() ?? 0;
    if (!s.isDirectory()) throw new StateDirError(`state dir ${j.dir}: not a directory`);
    if (s.uid !== uid)
      throw new StateDirError(`state dir ${j.dir}: owned by uid ${s.uid}, not ${uid}`);
    if ((s.mode & 0o077) !== 0) {
      const mode = (s.mode & 0o777).toString(8);
      throw new StateDirError(`state dir ${j.dir}: mode ${mode}, others may read it (want 700)`);
    }
    rmSync(j.temp, { force: true });
    return j;
  }

  /**
   * Records `change` (whole, or not at all) as the one pending change.
   * Throws before anything is changed: RESOURCE_EXHAUSTED when the record
   * would be over the bound, UNAVAILABLE when it cannot be written.
   */
  write(change: Change, attempts = 0): void {
    if (this.stale) this.clear();
    if (this.stale) {
      throw new TtrpcError(
        "cannot remove the last change's record: refusing changes",
        Code.UNAVAILABLE,
      );
    }
    const { bootId, netns, owner } = this.options;
    const body: ChangeRecord = {
      bootId,
      netns,
      owner,
      at: new Date().toISOString(),
      attempts,
      change,
    };
    const bytes = encodeRecord(body);
    if (bytes.length > this.maxBytes) {
      throw new TtrpcError(
        `the state to put back should the agent die mid-change is ${bytes.length} bytes, over the limit of ${this.maxBytes}`,
        Code.RESOURCE_EXHAUSTED,
      );
    }
    try {
      this.put(bytes);
    } catch (err) {
      rmSync(this.temp, { force: true });
      throw new TtrpcError(
        `cannot record the change before making it: ${(err as Error).message}`,
        Code.UNAVAILABLE,
      );
    }
  }

  /**
   * A change's record is written straight to its name, created anew (one
   * small write): a kill inside the write leaves a torn file the header
   * refuses, and the change had not started, so setting it aside is right.
   * A record that is already there (a restart's restore counting its
   * attempt, recover.ts) is still needed whole until its successor is:
   * that one goes through a temporary file and a rename.
   */
  private put(bytes: Buffer): void {
    try {
      writeFileSync(this.record, bytes, { mode: 0o600, flag: "wx" });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    writeFileSync(this.temp, bytes, { mode: 0o600 });
    renameSync(this.temp, this.record);
  }

  /** Removes the pending record. Never throws: a failure is logged and retried before the next write. */
  clear(): void {
    try {
      unlinkSync(this.record);
      this.stale = false;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        this.stale = false;
        return;
      }
      this.stale = true;
      this.options.log.error("cannot remove the change record", {
        path: this.record,
        error: (err as Error).message,
      });
    }
  }

  /** Reads what the last agent left, deciding whether it may be restored from. */
  find(): Found {
    let bytes: Buffer;
    try {
      bytes = this.readBounded();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return { kind: "none" };
      if (err instanceof OverBound) return this.setAside(err.message);
      return this.setAside(`unreadable: ${(err as Error).message}`);
    }
    const decoded = decodeRecord(bytes);
    if (!decoded.ok) return this.setAside(decoded.reason);
    const parsed = parseChangeRecord(decoded.body);
    if (!parsed.ok) return this.setAside(`unparsable: ${parsed.reason}`);
    const { record } = parsed;
    if (record.bootId !== this.options.bootId) {
      return this.setAside(
        `of another boot (${record.bootId}, this one is ${this.options.bootId})`,
      );
    }
    if (record.netns !== this.options.netns) {
      return { kind: "left", reason: `of another network namespace (${record.netns})` };
    }
    const { owner } = record;
    if (owner.pid !== process.pid && stillRunning(owner.pid, owner.start)) {
      return { kind: "left", reason: `its writer (pid ${owner.pid}) still runs` };
    }
    return { kind: "record", record, bytes: bytes.length };
  }

  /** Moves the record to rejected.rec (one slot: it replaces an older one) and says why. */
  setAside(reason: string): Found {
    try {
      renameSync(this.record, this.rejected);
    } catch (err) {
      // Renaming in our own directory does not fail; if it does, the record must still not be acted on.
      this.options.log.error("cannot set the change record aside", {
        error: (err as Error).message,
      });
      this.clear();
    }
    return { kind: "set-aside", reason };
  }

  /** Where a record set aside goes. */
  get rejectedPath(): string {
    return this.rejected;
  }

  /** The record's path. */
  get recordPath(): string {
    return this.record;
  }

  private readBounded(): Buffer {
    const fd = openSync(this.record, "r");
    try {
      const size = fstatSync(fd).size;
      const max = this.maxBytes + MAX_HEADER_BYTES;
      if (size > max) throw new OverBound(`${size} bytes, over the limit of ${this.maxBytes}`);
      const buf = Buffer.alloc(size);
      let at = 0;
      while (at < size) {
        const n = readSync(fd, buf, at, size - at, at);
        if (n === 0) break;
        at += n;
      }
      return buf.subarray(0, at);
    } finally {
      closeSync(fd);
    }
  }
}

class OverBound extends Error {}
