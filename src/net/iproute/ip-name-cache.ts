/**
 * Whether a long-lived iproute2's link name cache can still be trusted,
 * judged from the link listings the process printed. iproute2 (lib/ll_map.c)
 * fills the cache from its first listing and from lookups, and drops an
 * entry only when it changes that link itself. So, between two listings:
 * - a link added by someone else is harmless (not cached yet);
 * - a link renamed by someone else leaves its old name cached: `dev NEW`
 *   and `dev OLD` resolve wrongly, routes print the old name;
 * - a link removed leaves its name cached: the next link to take that
 *   name (even by this process's own rename, later in the same batch)
 *   resolves to the gone index.
 * Pure: the session feeds it each listing and retires the process on false.
 */

export class NameCacheWatch {
  /** Index to name, as last listed. */
  private links: Map<number, string> | undefined;

  /**
   * Records `doc`, a `-json addr show` or `link show` document. True when
   * no cached name can be wrong for the links it shows. `own`: the listing
   * follows this process's own link changes (its renames are its own, and
   * dropped from its cache as it made them; the links it removes are not:
   * no Kata or Network call removes one). The first listing is true
   * (iproute2 fills its cache from it); an unreadable one is false.
   */
  observe(doc: string, own = false): boolean {
    const now = parseListing(doc);
    const before = this.links;
    this.links = now;
    if (now === undefined) return false;
    if (before === undefined) return true;
    for (const [index, name] of before) {
      const is = now.get(index);
      if (is === undefined || (!own && is !== name)) return false;
    }
    return true;
  }
}

/** Index to name of every link in a listing; undefined when it cannot be read. */
export function parseListing(doc: string): Map<number, string> | undefined {
  try {
    const links = JSON.parse(doc) as unknown;
    if (!Array.isArray(links)) return undefined;
    const map = new Map<number, string>();
    for (const l of links as { ifindex?: unknown; ifname?: unknown }[]) {
      if (typeof l.ifindex !== "number" || typeof l.ifname !== "string") return undefined;
      map.set(l.ifindex, l.ifname);
    }
    return map;
  } catch {
    return undefined;
  }
}
