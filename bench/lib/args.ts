/**
 * The bench tools' command-line options: `--key value` pairs read from
 * process.argv, a default standing in for a missing one.
 */

const argv = process.argv.slice(2);

/** The value after `key`, else `fallback`; throws when neither is there (a required option). */
export function option(key: string, fallback?: string): string {
  const i = argv.indexOf(key);
  const v = i >= 0 ? argv[i + 1] : fallback;
  if (v === undefined) throw new Error(`${key} is required`);
  return v;
}

/** Whether the flag `key` (no value) was given. */
export function flag(key: string): boolean {
  return argv.includes(key);
}
