/**
 * Counts the entries of repeated fields in encoded protobuf bytes, before
 * they are decoded. Two bytes (`0a 00`) make one empty message entry: a
 * 4 MiB payload decodes into two million objects, far more memory than the
 * bytes. Counting on the wire first bounds what decoding may build.
 */
import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { Code, TtrpcError } from "./codes";

/** Nesting followed at most (our messages nest three deep). */
const MAX_DEPTH = 16;

const fieldsByNumber = new WeakMap<DescMessage, Map<number, DescField>>();

function fieldOf(schema: DescMessage, no: number): DescField | undefined {
  let map = fieldsByNumber.get(schema);
  if (map === undefined) {
    map = new Map(schema.fields.map((f) => [f.number, f]));
    fieldsByNumber.set(schema, map);
  }
  return map.get(no);
}

/**
 * Throws RESOURCE_EXHAUSTED naming the field (e.g. `routes.Routes: more than
 * 100000 entries`) when any repeated or map field of `schema`, summed over
 * every message that holds it, has more than `limit` entries. Malformed
 * bytes end the count silently: decoding reports them.
 */
export function countRepeated(schema: DescMessage, bytes: Uint8Array, limit: number): void {
  const counts = new Map<DescField, number>();
  // readVarint's end position (no object per varint: a 10,000-route request
  // has ~60,000 of them, and this runs before every decode).
  let next = 0;
  const readVarint = (pos: number, end: number): number | undefined => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10 && pos + i < end; i++) {
      const b = bytes[pos + i] as number;
      value += (b & 0x7f) * scale;
      scale *= 128;
      if (b < 0x80) {
        next = pos + i + 1;
        return value;
      }
    }
    return undefined;
  };
  const scan = (msg: DescMessage, start: number, end: number, path: string, depth: number) => {
    let pos = start;
    while (pos < end) {
      const tag = readVarint(pos, end);
      if (tag === undefined) return;
      pos = next;
      const wireType = tag % 8;
      const field = fieldOf(msg, Math.floor(tag / 8));
      if (wireType === 0) {
        if (readVarint(pos, end) === undefined) return;
        pos = next;
      } else if (wireType === 1 || wireType === 5) {
        pos += wireType === 1 ? 8 : 4;
      } else if (wireType === 2) {
        const len = readVarint(pos, end);
        if (len === undefined || len > end - next) return;
        const from = next;
        pos = from + len;
        if (field === undefined) continue;
        if (field.fieldKind === "list" || field.fieldKind === "map") {
          // A packed scalar list holds at most one entry per byte.
          const n = field.fieldKind === "list" && field.listKind !== "message" ? len : 1;
          const total = (counts.get(field) ?? 0) + n;
          counts.set(field, total);
          if (total > limit) {
            throw new TtrpcError(
              `${nameOf(path, field)}: more than ${limit} entries (the agent's limit)`,
              Code.RESOURCE_EXHAUSTED,
            );
          }
        }
        // A map entry is a key/value pair, not a message of the value's type.
        const sub = field.fieldKind === "map" ? undefined : field.message;
        if (sub !== undefined && depth < MAX_DEPTH)
          scan(sub, from, pos, nameOf(path, field), depth + 1);
      } else {
        // Groups (3, 4) and unknown wire types: the decoder's to judge.
        return;
      }
    }
  };
  scan(schema, 0, bytes.length, "", 0);
}

/** The dotted name of `field` under `path`, built only when needed. */
function nameOf(path: string, field: DescField): string {
  return path ? `${path}.${field.name}` : field.name;
}
