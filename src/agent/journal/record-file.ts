/**
 * The bytes of a change record (journal.ts): one header line, then the body.
 *
 *   netagent-change-record 1 BYTES CRC32\n
 *   {"bootId": ..., "change": {...}}
 *
 * BYTES is the body's length and CRC32 its checksum (8 hex digits), so a
 * file cut short, grown or altered does not decode: no torn record is acted
 * on, whatever wrote it: an agent killed inside the write of a record
 * leaves one torn (journal.ts writes a new record straight to its name), and
 * its change had not started. Pure.
 */

const RECORD_MAGIC = "netagent-change-record";
/** Bumped when the body's shape changes: a record of another format is set aside, not guessed at. */
const RECORD_FORMAT = 1;
/** The header's longest form: magic, format, a length and a checksum. */
export const MAX_HEADER_BYTES = 80;

export type Decoded = { ok: true; body: unknown } | { ok: false; reason: string };

function crc32(bytes: Uint8Array): string {
  return (Bun.hash.crc32(bytes) >>> 0).toString(16).padStart(8, "0");
}

/** Array elements stringified at a time (see {@link stringify}). */
const CHUNK = 1000;

/**
 * JSON.stringify's text, built in pieces: one JSON.stringify of a whole
 * large array grows worse than linearly in Bun's JavaScriptCore (100,000
 * routes: seconds), a thousand elements at a time and joined stays linear
 * (bench/profile/journal-cost.ts). Objects and arrays at the top are walked;
 * what is inside an array's chunk is JSON.stringify's own.
 */
function stringify(v: unknown): string {
  if (Array.isArray(v)) {
    if (v.length <= CHUNK) return JSON.stringify(v);
    const parts: string[] = [];
    for (let i = 0; i < v.length; i += CHUNK) {
      parts.push(JSON.stringify(v.slice(i, i + CHUNK)).slice(1, -1));
    }
    return `[${parts.join(",")}]`;
  }
  if (v !== null && typeof v === "object") {
    const fields: string[] = [];
    for (const [k, x] of Object.entries(v)) {
      if (x !== undefined) fields.push(`${JSON.stringify(k)}:${stringify(x)}`);
    }
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(v);
}

/**
 * Whether `v` holds, within `depth` levels of objects, an array longer than
 * {@link CHUNK}. A record without one (every change of a pod's sync) is one
 * JSON.stringify: the walk above, run a few times per call and so never
 * made fast by the JIT, costs the agent more than the write itself.
 */
function hasLongArray(v: unknown, depth: number): boolean {
  if (Array.isArray(v)) return v.length > CHUNK;
  if (depth === 0 || v === null || typeof v !== "object") return false;
  for (const k in v) {
    if (hasLongArray((v as Record<string, unknown>)[k], depth - 1)) return true;
  }
  return false;
}

/** The file's bytes for `body` (plain JSON data: objects, arrays, strings, numbers, booleans). */
export function encodeRecord(body: unknown): Buffer {
  // A change's lists sit two levels down (body.change.routes).
  const text = hasLongArray(body, 3) ? stringify(body) : JSON.stringify(body);
  const data = Buffer.from(text, "utf8");
  const header = Buffer.from(`${RECORD_MAGIC} ${RECORD_FORMAT} ${data.length} ${crc32(data)}\n`);
  return Buffer.concat([header, data]);
}

/** The body of a record file, or why it is not one (named for the log). */
export function decodeRecord(bytes: Uint8Array): Decoded {
  const nl = bytes.subarray(0, MAX_HEADER_BYTES).indexOf(0x0a);
  if (nl < 0) return { ok: false, reason: "no header line" };
  const header = Buffer.from(bytes.subarray(0, nl)).toString("latin1");
  const m = /^(\S+) (\d+) (\d+) ([0-9a-f]{8})$/.exec(header);
  if (!m || m[1] !== RECORD_MAGIC) return { ok: false, reason: "not a change record" };
  if (Number(m[2]) !== RECORD_FORMAT) {
    return { ok: false, reason: `record format ${m[2]}, this agent reads ${RECORD_FORMAT}` };
  }
  const data = bytes.subarray(nl + 1);
  const length = Number(m[3]);
  if (data.length !== length) {
    return {
      ok: false,
      reason: `torn: the header says ${length} bytes, the file has ${data.length}`,
    };
  }
  if (crc32(data) !== m[4]) return { ok: false, reason: "torn: checksum mismatch" };
  try {
    return { ok: true, body: JSON.parse(Buffer.from(data).toString("utf8")) };
  } catch (err) {
    return { ok: false, reason: `unreadable body: ${(err as Error).message}` };
  }
}
