/**
 * One test per entry of the ignore list (ignore.ts): two real netns that
 * carry the same configuration still differ in the ignored field (or the
 * kernel makes the ignored object by itself), and the comparison does not
 * report it. The entries' tests are in ignore-links.ts,
 * ignore-addresses.ts, ignore-routes.ts and ignore-sources.ts; a last test checks every entry
 * has its test.
 */
import { afterAll, describe, expect, it } from "vitest";
import { IGNORED } from "./ignore";
import { addressEntries, kernelLinkLocalEntries } from "./ignore-addresses";
import { scratch, tested } from "./ignore-helpers";
import { carrierEntries, linkEntries } from "./ignore-links";
import { lookupEntries, routeAndNeighbourEntries } from "./ignore-routes";
import { sourceEntries } from "./ignore-sources";

afterAll(() => scratch.removeAll());

describe.concurrent("the ignore list, entry by entry", () => {
  linkEntries();
  addressEntries();
  kernelLinkLocalEntries();
  routeAndNeighbourEntries();
  carrierEntries();
  lookupEntries();
  sourceEntries();

  it("every entry of the ignore list has its test above", () => {
    expect(tested.sort()).toEqual(Object.keys(IGNORED).sort());
  });
});
