/** Hand-made complete reads for the comparison's unit tests. */
import type { CompleteRead } from "../../src/host/compare/complete-read";

/** A read with nothing in it but what `more` gives. */
export function emptyRead(more: Partial<CompleteRead> = {}): CompleteRead {
  return {
    links: [],
    addresses: [],
    routes: [],
    rules: [],
    neighbours: [],
    nexthops: [],
    sysctls: new Map(),
    fresh: new Map(),
    ...more,
  };
}
