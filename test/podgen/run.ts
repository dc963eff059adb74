/**
 * The measuring tool of sync's fidelity: random real pods mirrored by netagentctl
 * sync, judged by complete independent reads and by route lookups.
 *
 *   npx bun test/podgen/run.ts [--seeds 40] [--from 1] [--probes 200] [--json] [--strict] [--verbose]
 *
 * Needs root (it makes network namespaces; never touches the machine's own)
 * and `npm run build` (dist/netagent, dist/netagentctl). Exits 0 whatever it
 * measures; --strict exits 1 on any lie, any pod not mirrored exactly, any
 * lookup disagreeing or any seed that could not be measured (for CI).
 */
import { inFlight, measureSeed, type SeedResult } from "./measure";
import { seedLine, totals, totalsText } from "./report";

const USAGE =
  "usage: bun test/podgen/run.ts [--seeds N] [--from SEED] [--probes N] [--json] [--strict] [--verbose]";

function parse(argv: string[]) {
  const opts = { seeds: 40, from: 1, probes: 200, json: false, strict: false, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--json" || a === "--strict" || a === "--verbose") opts[a.slice(2) as "json"] = true;
    else if (a === "--seeds" || a === "--from" || a === "--probes") {
      const v = Number(argv[++i]);
      if (!Number.isSafeInteger(v) || v < 0)
        throw new Error(`${a}: "${argv[i]}" is not a whole number\n${USAGE}`);
      opts[a.slice(2) as "seeds"] = v;
    } else if (a === "--help") {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument "${a}"\n${USAGE}`);
  }
  return opts;
}

async function main(): Promise<number> {
  const opts = parse(process.argv.slice(2));
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => {
      void (inFlight.pod?.remove() ?? Promise.resolve()).finally(() => process.exit(130));
    });
  }
  const results: SeedResult[] = [];
  const errors: { seed: number; error: string }[] = [];
  const say = (s: string) => (opts.json ? process.stderr : process.stdout).write(`${s}\n`);
  for (let seed = opts.from; seed < opts.from + opts.seeds; seed++) {
    try {
      const r = await measureSeed(seed, opts.probes);
      results.push(r);
      say(seedLine(r, opts.verbose ? Number.POSITIVE_INFINITY : 3));
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      errors.push({ seed, error });
      say(`seed ${seed}: could not be measured: ${error}`);
    }
  }
  const t = totals(results);
  if (opts.json) console.log(JSON.stringify({ totals: { ...t, errors }, results }, null, 1));
  else {
    console.log(totalsText(t));
    if (errors.length) console.log(`\nnot measured: ${errors.map((e) => e.seed).join(", ")}`);
  }
  const bad = t.lies + (t.seeds - t.mirrored) + (t.lookups - t.lookupsAgree) + errors.length;
  return opts.strict && bad > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
