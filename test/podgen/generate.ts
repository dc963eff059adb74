/**
 * The seeded generator of random pod network states: from a seed, 1-3 NICs
 * and the `ip`/`sysctl` commands that configure them with the vocabulary
 * sync carries (addresses, routes in several tables, nexthop objects,
 * rules, neighbours, link attributes, sysctls). Pure: no I/O, the same
 * recipe for the same seed everywhere (test/podgen/prng.ts).
 */
import { genAddresses, genLinkAttributes, genNics } from "./gen-links";
import { genNexthops } from "./gen-nexthops";
import { genRoutes } from "./gen-routes";
import { genNeighbours, genRules } from "./gen-rules";
import { GenState } from "./gen-state";
import { genSysctls } from "./gen-sysctls";
import { Prng } from "./prng";
import type { Recipe } from "./recipe";

export function generatePod(seed: number): Recipe {
  const g = new GenState(new Prng(seed));
  genNics(g);
  genLinkAttributes(g);
  genAddresses(g);
  // Routes may name the addresses as sources: DAD must be over first.
  g.settle();
  genNexthops(g);
  genRoutes(g);
  genRules(g);
  genNeighbours(g);
  genSysctls(g);
  return {
    seed,
    nics: g.nics.map(({ name, kind, mac }) => (mac ? { name, kind, mac } : { name, kind })),
    steps: g.steps,
  };
}
