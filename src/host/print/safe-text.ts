/**
 * What netagentctl prints is safe for a terminal: strings from the guest
 * (a compromised guest chooses its link names, routes, versions and error
 * messages) must not carry escape sequences, nor forge lines or reorder
 * text. One place turns every control character into a visible `\uXXXX`:
 * C0 (U+0000–U+001F), DEL, C1 (U+0080–U+009F; U+009B is a one-byte CSI
 * to many terminals), and the bidirectional controls (U+061C, U+200E,
 * U+200F, U+202A–U+202E, U+2066–U+2069) that make text display in another
 * order than it is, and the line and paragraph separators U+2028, U+2029. `\uXXXX` is also a valid JSON escape, so JSON output
 * passed through {@link terminalSafe} stays JSON, with the same values.
 */

// Built from text (the linter rightly flags control characters in regex literals).
const BIDI = "\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069";
const CONTROLS = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${BIDI}]`, "g");
const CONTROLS_BUT_NEWLINE = new RegExp(
  `[\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f${BIDI}]`,
  "g",
);

const asUnicodeEscape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** One value for one line (a table cell, a name, a message): every control escaped, newlines too. */
export function escapeControls(value: string): string {
  return value.replace(CONTROLS, asUnicodeEscape);
}

/**
 * Whole output (lines, JSON): every control but the newline escaped. The
 * last line of defence; values should already have gone through
 * {@link escapeControls} so that none can add a line of its own.
 */
export function terminalSafe(text: string): string {
  return text.replace(CONTROLS_BUT_NEWLINE, asUnicodeEscape);
}
