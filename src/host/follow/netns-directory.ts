/**
 * Noticing that pod namespaces are deleted, for every sandbox at once: ONE
 * inotify watch per directory holding namespace files (/run/netns), each
 * event checked only against the sandboxes whose file it names. (A watch
 * per sandbox, as `sync --watch` keeps for its one pod, would wake every
 * sandbox on every namespace created or deleted on the node.)
 *
 * A namespace is gone when its file is missing or names another inode
 * than when it was first seen (`ip netns del` unmounts and unlinks it). A
 * /proc/PID/ns/net path is not watched here: its sandbox keeps its own
 * watcher (netns-gone.ts, which waits on the PID).
 */
import { type FSWatcher, statSync, watch } from "node:fs";
import { basename, dirname } from "node:path";

function inode(path: string): string | undefined {
  try {
    const s = statSync(path);
    return `${s.dev}:${s.ino}`;
  } catch {
    return undefined;
  }
}

interface Entry {
  file: string;
  identity: string | undefined;
  onGone: () => void;
}

export class NetnsDirectory {
  private readonly dirs = new Map<string, { watcher: FSWatcher; entries: Set<Entry> }>();

  /** True when `file` can be followed here (not a /proc path). */
  static handles(file: string): boolean {
    return !file.startsWith("/proc/");
  }

  /**
   * Calls `onGone` once when `file` is gone; answers a function that stops
   * watching it (and the directory, with its last file). `onGone` is called
   * at once when the file is already gone.
   */
  follow(file: string, onGone: () => void): () => void {
    const entry: Entry = { file, identity: inode(file), onGone };
    if (entry.identity === undefined) {
      queueMicrotask(onGone);
      return () => {};
    }
    const dir = dirname(file);
    let d = this.dirs.get(dir);
    if (!d) {
      const entries = new Set<Entry>();
      const watcher = watch(dir, { persistent: false }, (_type, name) => {
        for (const e of [...entries]) {
          if (name && basename(e.file) !== String(name)) continue;
          const now = inode(e.file);
          if (now === undefined || now !== e.identity) {
            entries.delete(e);
            e.onGone();
          }
        }
      });
      watcher.on("error", () => {});
      d = { watcher, entries };
      this.dirs.set(dir, d);
    }
    d.entries.add(entry);
    const here = d;
    return () => {
      here.entries.delete(entry);
      if (here.entries.size === 0 && this.dirs.get(dir) === here) {
        here.watcher.close();
        this.dirs.delete(dir);
      }
    };
  }

  /** Whether `file` is gone now. */
  static gone(file: string, identity: string | undefined): boolean {
    const now = inode(file);
    return now === undefined || now !== identity;
  }

  /** The identity to compare with later. */
  static identity(file: string): string | undefined {
    return inode(file);
  }

  close(): void {
    for (const d of this.dirs.values()) d.watcher.close();
    this.dirs.clear();
  }
}
