/**
 * `ip -json` output recorded from iproute2 6.1 in a throwaway netns
 * (test/fixtures/ip/*.out), read by name: the whole text, or its one JSON
 * document.
 */
import { readFileSync } from "node:fs";
import { expect } from "vitest";
import { splitJsonDocuments } from "../../src/net/parse/json-documents";

export const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/ip/${name}`, import.meta.url), "utf8");
export const one = (name: string) => {
  const docs = splitJsonDocuments(fixture(name));
  expect(docs).toHaveLength(1);
  return docs[0];
};
