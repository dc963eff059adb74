/**
 * User and group names back to ids, through the /etc/passwd and
 * /etc/group that iproute2 itself read to print them (it prints a tun's
 * owner by name when it has one). Read when a name comes up, kept while
 * the file's mtime and size stay; a name without an entry is undefined.
 */
import { readFileSync, statSync } from "node:fs";

const FILES = { user: "/etc/passwd", group: "/etc/group" } as const;

const cache = new Map<string, { stamp: string; ids: Map<string, number> }>();

/** `name:x:id:...` lines to name -> id (the first entry of a name wins, as getpwnam's). */
export function parseAccounts(text: string): Map<string, number> {
  const ids = new Map<string, number>();
  for (const line of text.split("\n")) {
    const [name, , id] = line.split(":");
    if (!name || id === undefined || !/^\d{1,10}$/.test(id) || ids.has(name)) continue;
    ids.set(name, Number(id));
  }
  return ids;
}

export function accountId(kind: "user" | "group", name: string): number | undefined {
  if (/^\d{1,10}$/.test(name)) return Number(name);
  const file = FILES[kind];
  try {
    const st = statSync(file);
    const stamp = `${st.mtimeMs} ${st.size}`;
    let entry = cache.get(file);
    if (entry?.stamp !== stamp) {
      entry = { stamp, ids: parseAccounts(readFileSync(file, "utf8")) };
      cache.set(file, entry);
    }
    return entry.ids.get(name);
  } catch {
    return undefined;
  }
}
