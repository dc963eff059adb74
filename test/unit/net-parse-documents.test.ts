/**
 * splitJsonDocuments: the one `ip -batch` read of addresses, routes and
 * neighbours split into its JSON documents, equal to the single reads
 * (test/fixtures/ip/*.out); brackets inside strings; what is not JSON.
 */

import { describe, expect, it } from "vitest";
import { splitJsonDocuments } from "../../src/net/parse/json-documents";
import { parseLinks, parseNeighbors, parseRoutes } from "../../src/net/parse/parse-ip-json";
import { fixture, one } from "../helpers/ip-fixtures";

describe("splitJsonDocuments", () => {
  it("splits the -batch state read into addr, route and neigh documents equal to the single reads", () => {
    const docs = splitJsonDocuments(fixture("batch-state.out"));
    expect(docs).toHaveLength(3);
    expect(parseLinks(docs[0])).toEqual(parseLinks(one("addr-show.out")));
    expect(parseRoutes(docs[1], 4)).toEqual(parseRoutes(one("route-show-main.out"), 4));
    expect(parseNeighbors(docs[2])).toEqual(parseNeighbors(one("neigh-show.out")));
  });

  it.each([
    ["empty input", "", []],
    ["whitespace only", " \n\t", []],
    ["back to back", '[1][{"a":2}]{}', [[1], [{ a: 2 }], {}]],
    ["newline separated", "[]\n[]\n", [[], []]],
    [
      "brackets inside strings",
      '[{"s":"]["},{"t":"{{"}]\n["}"]',
      [[{ s: "][" }, { t: "{{" }], ["}"]],
    ],
    ["escaped quotes", '[{"s":"a\\"]b"}]["\\\\"]', [[{ s: 'a"]b' }], ["\\"]]],
    ["escaped backslash before a quote", '["x\\\\"]["]"]', [["x\\"], ["]"]]],
    ["unicode escapes", '["\\u005d"]', [["]"]]],
  ])("%s", (_name, text, expected) => {
    expect(splitJsonDocuments(text)).toEqual(expected);
  });

  it.each([
    ["truncated array", '[{"a":1}'],
    ["truncated inside a string", '[{"a":"]'],
    ["truncated after a whole document", '[][{"a":[1,2]'],
    ["cut in the recorded batch output", fixture("batch-state.out").slice(0, 3000)],
  ])("throws SyntaxError on %s", (_name, text) => {
    expect(() => splitJsonDocuments(text)).toThrow(SyntaxError);
  });

  it("throws SyntaxError when a balanced slice is not JSON", () => {
    expect(() => splitJsonDocuments("[1,,2]")).toThrow(SyntaxError);
  });
});
