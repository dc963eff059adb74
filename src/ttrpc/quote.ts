/**
 * Bounded quoting of peer-supplied values in messages (errors, logs). A
 * value is the peer's to make as long as a frame allows, and JSON escaping
 * can grow it sixfold (`\x01` -> `\u0001`): quoted whole, a value of
 * 700 KB makes an answer larger than the 4 MiB frame limit. Here every value is cut
 * to a short prefix, with its full length said, so a message's size is
 * bounded whatever the request held.
 */

/** Code units of a value kept when quoting it (escaped, at most 6x this). */
export const QUOTE_PREFIX = 48;

/** Bytes of a plain text kept by {@link clipText} unless told otherwise. */
const CLIP_BYTES = 1024;

/** UTF-8 length of a string, counted without encoding it. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/** The first `n` code units of `s`, never ending inside a surrogate pair. */
function prefix(s: string, n: number): string {
  if (s.length <= n) return s;
  const c = s.charCodeAt(n - 1);
  return s.slice(0, c >= 0xd800 && c <= 0xdbff ? n - 1 : n);
}

/**
 * `value` as JSON, cut when long: `"eth0"`, `7`, or for a long string
 * `"\"\"\"…" (2100000 bytes)`. At most a few hundred bytes for any input.
 */
export function quote(value: unknown, keep = QUOTE_PREFIX): string {
  if (typeof value === "string") {
    if (value.length <= keep) return JSON.stringify(value);
    return `${JSON.stringify(`${prefix(value, keep)}…`)} (${utf8Length(value)} bytes)`;
  }
  if (typeof value === "bigint") return value.toString();
  const text = JSON.stringify(value) ?? String(value);
  return text.length <= keep ? text : `${prefix(text, keep)}… (${text.length} chars)`;
}

/**
 * A plain text (no quotes added) cut to about `maxBytes` UTF-8 bytes, with
 * the full length said when cut: for words that are not a single value,
 * such as an error's text or a service name Go prints unquoted.
 */
export function clipText(text: string, maxBytes = CLIP_BYTES): string {
  // A code unit is at most 3 bytes: this short a text always fits.
  if (text.length * 3 <= maxBytes) return text;
  let bytes = 0;
  let keep = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // A surrogate half counts 2: a pair's 4 bytes, never split by prefix().
    bytes += c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 2 : 3;
    if (bytes > maxBytes) break;
    keep = i + 1;
  }
  if (keep === text.length) return text;
  return `${prefix(text, keep)}… (${utf8Length(text)} bytes)`;
}
