/**
 * A Kata root (/run/vc/sbs, /run/kata) watched for sandbox directories,
 * with inotify (fs.watch), never polled. Each burst of events rereads the
 * directory's entries once (after {@link SCAN_DEBOUNCE_MS}). A root that
 * does not exist yet is waited for by watching its nearest existing
 * ancestor; a root removed goes back to that.
 *
 * An entry is a sandbox when it is a directory, or a symlink whose target
 * stays inside the root; a symlink leading out of the root is reported as
 * refused (never followed). At most {@link MAX_SANDBOXES} entries per root
 * are taken (kubelet runs 110 pods a node by default); more are named in a
 * warning and left alone.
 */
import { existsSync, type FSWatcher, readdirSync, realpathSync, statSync, watch } from "node:fs";
import { dirname, join } from "node:path";
import { isWithin } from "./sandbox-files";

const SCAN_DEBOUNCE_MS = 20;
const MAX_SANDBOXES = 1024;

/** One sandbox entry of a root: its directory, or why it is refused. */
interface RootEntry {
  dir: string;
  refused?: string;
}

export interface RootListing {
  /** The root's real path, or undefined while it does not exist. */
  real: string | undefined;
  entries: Map<string, RootEntry>;
}

/** Reads a root's entries now. */
function scanRoot(root: string, warn: (m: string) => void): RootListing {
  let real: string;
  try {
    real = realpathSync(root);
  } catch {
    return { real: undefined, entries: new Map() };
  }
  const entries = new Map<string, RootEntry>();
  let dirents: import("node:fs").Dirent[];
  try {
    dirents = readdirSync(real, { withFileTypes: true });
  } catch {
    return { real: undefined, entries };
  }
  for (const d of dirents) {
    if (entries.size >= MAX_SANDBOXES) {
      warn(`${root}: more than ${MAX_SANDBOXES} entries; the rest are not followed`);
      break;
    }
    const path = join(real, d.name);
    if (d.isDirectory()) entries.set(d.name, { dir: path });
    else if (d.isSymbolicLink()) {
      let target: string;
      try {
        target = realpathSync(path);
      } catch {
        continue; // dangling: nothing to follow yet
      }
      if (isWithin(real, target) && target !== real) entries.set(d.name, { dir: target });
      else
        entries.set(d.name, {
          dir: path,
          refused: `${path} is a symlink out of ${real} (to ${target})`,
        });
    }
  }
  return { real, entries };
}

export class RootWatcher {
  private watcher: FSWatcher | undefined;
  private watching: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(
    readonly root: string,
    private readonly onListing: (listing: RootListing) => void,
    private readonly warn: (m: string) => void,
  ) {}

  start(): void {
    this.rescan();
  }

  private schedule(): void {
    if (this.closed || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.rescan();
    }, SCAN_DEBOUNCE_MS);
  }

  private rescan(): void {
    if (this.closed) return;
    const listing = scanRoot(this.root, this.warn);
    // Watch the root itself, or while it is missing its nearest existing ancestor.
    // (by inode too: a root removed and made again within one burst is a new directory).
    const target = listing.real ?? nearestAncestor(this.root);
    if (identity(target) !== this.watching) this.watchDir(target);
    this.onListing(listing);
  }

  private watchDir(dir: string): void {
    this.watcher?.close();
    this.watching = identity(dir);
    try {
      this.watcher = watch(dir, { persistent: false }, () => this.schedule());
      this.watcher.on("error", () => this.schedule());
    } catch (err) {
      this.warn(`cannot watch ${dir}: ${(err as Error).message}`);
      this.watcher = undefined;
    }
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.watcher?.close();
  }
}

function identity(dir: string): string {
  try {
    return `${dir}:${statSync(dir).ino}`;
  } catch {
    return dir;
  }
}

function nearestAncestor(path: string): string {
  let p = dirname(path);
  while (p !== "/" && !existsSync(p)) p = dirname(p);
  return p;
}
