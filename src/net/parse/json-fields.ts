/** Reading fields of parsed `ip -json` output without trusting its shape. */

export type Json = Record<string, unknown>;

/** The objects of a JSON array (anything else: none). */
export function asArray(doc: unknown): Json[] {
  return Array.isArray(doc) ? (doc.filter((x) => x && typeof x === "object") as Json[]) : [];
}

export function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** asArray(v)[0] without the filtered copy. */
export function firstObject(v: unknown): Json | undefined {
  if (!Array.isArray(v)) return undefined;
  for (const x of v) if (x && typeof x === "object") return x as Json;
  return undefined;
}
