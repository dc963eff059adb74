/**
 * The kernel command line split the way the kernel splits it (linux
 * lib/cmdline.c `next_arg`, driven by kernel/params.c `parse_args`), so
 * that the agent and the guest's init agree with the kernel on what is a
 * parameter. Pure; rootfs/init.sh carries the same rules in awk, and one
 * table of cases tests both (test/unit/kernel-cmdline.test.ts).
 *
 * The rules, as the kernel applies them:
 * - words are separated by unquoted white space (space, \t, \n, \v, \f, \r
 *   and byte 0xA0, which the kernel's ctype counts as space);
 * - a double quote toggles quoting anywhere in a word; there is no escape,
 *   so a quote cannot be part of a quoted text;
 * - `param=value` splits at the first `=` (not counting one at the very
 *   start of the word); a value that starts with a quote loses it, and the
 *   word's last character too when that is a quote: `p="a b"` is p = `a b`;
 * - a word that starts with a quote (`"p=a b"`) loses that quote and, when
 *   it ends with one, the last one: the whole parameter may be quoted;
 * - a bare `--` ends the parameters; what follows is init's argv.
 * Consequences: `x="a agent.debug_console"` is one parameter x, and
 * `"agent.log"=debug` is a parameter named `agent.log"`.
 */

/** One parameter; `value` is undefined for a word without `=`. */
export interface CmdlineParam {
  name: string;
  value?: string;
}

const SPACE = new Set([" ", "\t", "\n", "\v", "\f", "\r", "\xa0"]);

/**
 * Splits a command line into parameters, in order, stopping at `--`.
 * `text` holds one character per byte (read the file as latin1); names and
 * values are returned decoded as UTF-8. The newline /proc/cmdline adds at
 * the end is not part of the command line and is dropped.
 */
export function parseKernelCmdline(text: string): CmdlineParam[] {
  const out: CmdlineParam[] = [];
  let p = 0;
  const n = text.endsWith("\n") ? text.length - 1 : text.length;
  while (p < n && SPACE.has(text[p] as string)) p++;
  while (p < n) {
    let inQuote = false;
    let quoted = false;
    if (text[p] === '"') {
      p++;
      inQuote = true;
      quoted = true;
    }
    let i = p;
    let equals = -1;
    for (; i < n; i++) {
      const c = text[i] as string;
      if (SPACE.has(c) && !inQuote) break;
      // The kernel keeps "no = yet" as equals == 0, so one at offset 0 does not count.
      if (equals < 0 && c === "=" && i > p) equals = i;
      if (c === '"') inQuote = !inQuote;
    }
    // The word is text[p, i); `end` is where its kept part stops.
    let end = i;
    const lastIsQuote = i > p && text[i - 1] === '"';
    let param: CmdlineParam;
    if (equals < 0) {
      if (quoted && lastIsQuote) end = i - 1;
      param = { name: utf8(text.slice(p, end)) };
    } else {
      let valueStart = equals + 1;
      if (text[valueStart] === '"') {
        valueStart++;
        if (lastIsQuote) end = i - 1;
      }
      if (quoted && lastIsQuote) end = i - 1;
      param = {
        name: utf8(text.slice(p, equals)),
        value: utf8(text.slice(valueStart, Math.max(valueStart, end))),
      };
    }
    if (param.value === undefined && param.name === "--") break;
    out.push(param);
    p = i;
    while (p < n && SPACE.has(text[p] as string)) p++;
  }
  return out;
}

/** The last value given to `name` (the kernel applies parameters in order). */
export function lastCmdlineParam(
  params: readonly CmdlineParam[],
  name: string,
): CmdlineParam | undefined {
  for (let i = params.length - 1; i >= 0; i--) if (params[i]?.name === name) return params[i];
  return undefined;
}

function utf8(latin1: string): string {
  // Plain ASCII (the usual case) is the same in both.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test is for bytes above 0x7F
  return /^[\x00-\x7f]*$/.test(latin1) ? latin1 : Buffer.from(latin1, "latin1").toString("utf8");
}
