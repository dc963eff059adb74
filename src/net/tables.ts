/**
 * Routing table ids as iproute2 names them: 253 default, 254 main, 255
 * local, anything else by number (a guest has no rt_tables names of its own).
 */

export const TABLE_DEFAULT = 253;
export const TABLE_MAIN = 254;
export const TABLE_LOCAL = 255;

const NAMES: Record<string, number> = {
  default: TABLE_DEFAULT,
  main: TABLE_MAIN,
  local: TABLE_LOCAL,
};

/** A table as `ip -json` prints it ("main", "100") to its id; undefined for names we cannot map. */
export function parseTable(text: string): number | undefined {
  if (text in NAMES) return NAMES[text];
  if (!/^\d{1,10}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= 1 && n <= 0xffffffff ? n : undefined;
}

/** A table id as a batch token: the three kernel names, else the number. */
export function formatTable(id: number): string {
  if (id === TABLE_MAIN) return "main";
  if (id === TABLE_LOCAL) return "local";
  if (id === TABLE_DEFAULT) return "default";
  return String(id);
}
