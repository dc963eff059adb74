/**
 * The top-level JSON values `ip -json -batch` prints one after another
 * (one per show line), split and parsed. Pure.
 */

/** Splits the concatenated top-level JSON values that `ip -json -batch` prints. */
export function splitJsonDocuments(text: string): unknown[] {
  return splitLines(text) ?? scanDocuments(text);
}

/**
 * iproute2 prints each document on a line of its own: one JSON.parse per
 * line, without looking at every character in JavaScript first (a large
 * table's listing is megabytes). Undefined unless every line is blank or one whole
 * JSON array or object; then the scan below decides, with the same result
 * wherever this one gives any (a whole value's brackets balance only at its end).
 */
function splitLines(text: string): unknown[] | undefined {
  const docs: unknown[] = [];
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    let first = start;
    while (first < end && isJsonSpace(text.charCodeAt(first))) first++;
    if (first < end) {
      const c = text.charCodeAt(first);
      if (c !== 0x5b && c !== 0x7b) return undefined;
      try {
        docs.push(JSON.parse(text.slice(first, end)));
      } catch {
        return undefined;
      }
    }
    start = end + 1;
  }
  return docs;
}

/** Space, tab, carriage return (a line feed ends the line): JSON's whitespace. */
function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d;
}

/**
 * Where the JSON string whose opening quote is at `open` ends: the index of
 * its closing quote (a backslash escapes the character after it), or the
 * text's length when it does not close.
 */
function stringEnd(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i;
  }
  return text.length;
}

/** Whether `c` is `[` or `{`. */
export function isOpening(c: number): boolean {
  return c === 0x5b || c === 0x7b;
}

/** The index of the first bracket (`[ ] { }`) at or after `from` outside strings, or -1. */
export function nextBracket(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) i = stringEnd(text, i);
    else if (c === 0x5b || c === 0x7b || c === 0x5d || c === 0x7d) return i;
  }
  return -1;
}

/** The values at depth 0, found by their brackets outside strings. */
function scanDocuments(text: string): unknown[] {
  const docs: unknown[] = [];
  let depth = 0;
  let start = -1;
  for (let i = nextBracket(text, 0); i >= 0; i = nextBracket(text, i + 1)) {
    if (isOpening(text.charCodeAt(i))) {
      if (depth++ === 0) start = i;
    } else if (--depth === 0) docs.push(JSON.parse(text.slice(start, i + 1)));
  }
  if (depth !== 0) throw new SyntaxError("truncated JSON from ip");
  return docs;
}
