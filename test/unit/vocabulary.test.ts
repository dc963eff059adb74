/**
 * The kernel vocabulary (src/net/vocabulary) against independent sources:
 * the kernel's own headers (linux-libc-dev) for bit values and ids, and
 * iproute2's name files (/etc/iproute2) for the names it prints and takes.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  flagNames,
  IFF,
  isManagedLink,
  LOOPBACK,
  NTF_EXT_LEARNED,
  NTF_ROUTER,
  NUD,
  rawFlags,
} from "../../src/net/vocabulary/links";
import {
  formatTable,
  isRouteProtocol,
  parseScope,
  parseTable,
  parseTos,
  RTNH_F,
  RTNH_F_KERNEL_SET,
  RTNH_F_ONLINK,
  SCOPE_HOST,
  SCOPE_LINK,
  SCOPE_NOWHERE,
  SCOPE_SITE,
  SCOPE_UNIVERSE,
  scopeName,
  TABLE_DEFAULT,
  TABLE_LOCAL,
  TABLE_MAIN,
} from "../../src/net/vocabulary/routes";

const header = (name: string) => readFileSync(`/usr/include/linux/${name}`, "utf8");

/** `#define PREFIX_NAME value` (a number or `(1 << n)`) from a header. */
function defines(text: string, prefix: string): Record<string, number> {
  const out: Record<string, number> = {};
  const re = new RegExp(
    `^#define\\s+${prefix}(\\w+)\\s+\\(?\\s*(0x[0-9a-f]+|\\d+)(?:\\s*<<\\s*(\\d+))?`,
    "gim",
  );
  for (const m of text.matchAll(re)) {
    const base = Number(m[2]);
    out[m[1] as string] = m[3] === undefined ? base : base << Number(m[3]);
  }
  return out;
}

/** `PREFIX_NAME = value` (a number or `1<<n`) from an enum in a header. */
function enumValues(text: string, prefix: string): Record<string, number> {
  const out: Record<string, number> = {};
  const re = new RegExp(
    `^\\s*${prefix}(\\w+)\\s*=\\s*(0x[0-9a-f]+|\\d+)(?:\\s*<<\\s*(\\d+))?`,
    "gim",
  );
  for (const m of text.matchAll(re)) {
    const base = Number(m[2]);
    out[m[1] as string] = m[3] === undefined ? base : base << Number(m[3]);
  }
  return out;
}

/** "id name" lines of an iproute2 names file. */
function namesFile(name: string): [number, string][] {
  return readFileSync(`/etc/iproute2/${name}`, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const [id, n] = l.split(/\s+/);
      return [Number(id), n as string];
    });
}

describe("link and neighbour bits are the kernel's", () => {
  it("IFF_* as linux/if.h has them, every one", () => {
    const kernel = enumValues(header("if.h"), "IFF_");
    expect(Object.keys(kernel).length).toBeGreaterThanOrEqual(19);
    for (const [name, bit] of Object.entries(IFF))
      expect([name, kernel[name]]).toEqual([name, bit]);
    for (const name of Object.keys(kernel)) expect(name in IFF).toBe(true);
  });
  it("NUD_* and NTF_* as linux/neighbour.h has them", () => {
    const nud = defines(header("neighbour.h"), "NUD_");
    for (const [name, bit] of Object.entries(NUD)) expect([name, nud[name]]).toEqual([name, bit]);
    const ntf = defines(header("neighbour.h"), "NTF_");
    expect(ntf.ROUTER).toBe(NTF_ROUTER);
    expect(ntf.EXT_LEARNED).toBe(NTF_EXT_LEARNED);
  });
  it("rawFlags and flagNames are each other's inverse over the named bits", () => {
    const all = Object.keys(IFF);
    expect(flagNames(rawFlags(all))).toEqual(all);
    expect(rawFlags(["UP", "LOWER_UP", "NOT_A_FLAG"])).toBe(0x10001);
    expect(flagNames(0x80 | 0x1 | 0x80000000)).toEqual(["UP", "NOARP"]);
  });
  it("the loopback alone is unmanaged", () => {
    expect(LOOPBACK).toBe("lo");
    expect(isManagedLink("lo")).toBe(false);
    for (const name of ["eth0", "lo0", "LO", ""]) expect(isManagedLink(name)).toBe(true);
  });
});

describe("route words are the kernel's and iproute2's", () => {
  it("RTNH_F_* as linux/rtnetlink.h has them", () => {
    const kernel = defines(header("rtnetlink.h"), "RTNH_F_");
    for (const [name, bit] of Object.entries(RTNH_F))
      expect([name, kernel[name]]).toEqual([name, bit]);
    expect(RTNH_F_ONLINK).toBe(kernel.ONLINK);
    // What the validator took before the vocabulary: every bit but pervasive and onlink.
    expect(RTNH_F_KERNEL_SET).toBe(0x1 | 0x8 | 0x10 | 0x20 | 0x40 | 0x80);
  });
  it("RT_SCOPE_* and RT_TABLE_* as linux/rtnetlink.h has them", () => {
    const scopes = enumValues(header("rtnetlink.h"), "RT_SCOPE_");
    expect(scopes).toMatchObject({
      UNIVERSE: SCOPE_UNIVERSE,
      SITE: SCOPE_SITE,
      LINK: SCOPE_LINK,
      HOST: SCOPE_HOST,
      NOWHERE: SCOPE_NOWHERE,
    });
    const tables = enumValues(header("rtnetlink.h"), "RT_TABLE_");
    expect(tables).toMatchObject({ DEFAULT: TABLE_DEFAULT, MAIN: TABLE_MAIN, LOCAL: TABLE_LOCAL });
  });
  it("scope names as iproute2's rt_scopes, both ways; others by number", () => {
    const named = namesFile("rt_scopes");
    expect(named.length).toBe(5);
    for (const [id, name] of named) {
      expect(scopeName(id)).toBe(name);
      expect(parseScope(name)).toBe(id);
    }
    expect(parseScope("universe")).toBe(0);
    expect(scopeName(100)).toBe("100");
    expect(parseScope("100")).toBe(100);
    expect(parseScope(253)).toBe(253);
    expect(parseScope("no-such-scope")).toBe(0);
  });
  it("table names as iproute2's rt_tables, both ways; others by number", () => {
    for (const [id, name] of namesFile("rt_tables").filter(([id]) => id !== 0)) {
      expect(formatTable(id)).toBe(name);
      expect(parseTable(name)).toBe(id);
    }
    expect(formatTable(100)).toBe("100");
    expect(parseTable("100")).toBe(100);
    expect(parseTable("0")).toBeUndefined();
    expect(parseTable("4294967296")).toBeUndefined();
    expect(parseTable("unspec")).toBeUndefined();
    // Names are the table's own, not what every object inherits.
    for (const name of ["toString", "constructor", "__proto__"]) {
      expect(parseTable(name), name).toBeUndefined();
      expect(parseScope(name), name).toBe(0);
      expect(parseTos(name), name).toBeUndefined();
    }
  });
  it("every protocol iproute2 names (but unspec, which is 0) and 0-255 are route protocols", () => {
    const named = namesFile("rt_protos");
    expect(named.length).toBeGreaterThanOrEqual(20);
    for (const [id, name] of named) {
      expect([name, isRouteProtocol(name)]).toEqual([name, name !== "unspec"]);
      expect(isRouteProtocol(String(id))).toBe(true);
    }
    for (const p of ["0", "255", "99"]) expect(isRouteProtocol(p)).toBe(true);
    for (const p of ["256", "007", "-1", "", "Kernel", "nonesuch"])
      expect(isRouteProtocol(p)).toBe(false);
  });
});
