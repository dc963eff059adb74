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

/** An IPv6 default route of `route show`'s shape, one hop per gateway on `dev`, listed with `prefsrc`. */
export function multipath6(prefsrc: string, dev: string, ...gateways: string[]) {
  return {
    family: "inet6",
    dst: "default",
    prefsrc,
    nexthops: gateways.map((gateway) => ({ gateway, dev })),
  };
}
