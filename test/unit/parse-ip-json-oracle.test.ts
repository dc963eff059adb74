/**
 * The parser of `ip -json` output against the version it replaced
 * (test/unit/oracle/parse-ip-json-v1.ts): the document splitter on random
 * texts (documents a line each, several on a line, pretty-printed ones,
 * garbage, truncation), the route lists on random route objects, and
 * canonicalDst on random destinations: the same values or the same error.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Route } from "../../src/net/model/model";
import { splitJsonDocuments } from "../../src/net/parse/json-documents";
import { parseAllTableRoutes, parseRoutes } from "../../src/net/parse/parse-ip-json";
import { canonicalDst } from "../../src/net/vocabulary/routes";
import * as v1 from "./oracle/parse-ip-json-v1";

function outcome(f: () => unknown): unknown {
  try {
    // JSON keeps the key order: the same objects built the same way.
    return { ok: JSON.stringify(f()) };
  } catch (err) {
    return { error: (err as Error).name, message: (err as Error).message };
  }
}

const addr = fc.oneof(
  fc.constantFrom(
    "10.1.2.0",
    "10.1.2.3",
    "0.0.0.0",
    "010.0.0.0",
    "1.2.3",
    "2001:db8::",
    "2001:db8::1",
    "fe80::1",
    "::",
    "::ffff:1.2.3.4",
    "default",
    "",
    "x",
  ),
  fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join(".")),
);
/** IPv4 networks written canonically or nearly (host bits, a length with leading zeros). */
const network = fc
  .tuple(fc.nat(0xffffffff), fc.nat(33), fc.boolean(), fc.constantFrom("", "0", "00"))
  .map(([a, len, mask, zeros]) => {
    const p = Math.min(len, 32);
    const v = mask ? a - (a % 2 ** (32 - p)) : a;
    const quad = [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join(".");
    return `${quad}/${zeros}${len}`;
  });
const dst = fc.oneof(
  network,
  addr,
  fc
    .tuple(addr, fc.constantFrom("/0", "/8", "/24", "/32", "/024", "/33", "/64", "/128", "/", "/x"))
    .map(([a, s]) => a + s),
  fc.string({ maxLength: 8 }),
);

/**
 * A route of every table as the Kata-era parser saw it: where this parser
 * differs, an IPv4 route keeps an IPv6 gateway, an IPv6 local (anycast, multicast)
 * route keeps lo as its link, and tos, from, nhid and attributes are
 * carried (test/unit/net-parse-routes.test.ts covers those).
 */
function asBefore(r: Route): Route {
  const { tos: _t, from: _f, hops: _h, nhid: _n, attrs: _a, ...old } = r;
  const out: Route = { ...old };
  if (out.gateway !== undefined && out.family === 4 && out.gateway.includes(":"))
    delete out.gateway;
  if (out.family === 6 && out.type !== "unicast" && out.dev === "lo") out.dev = "";
  return out;
}

const routeObject = fc.record(
  {
    type: fc.constantFrom("unicast", "local", "broadcast", "blackhole", "unreachable", 3),
    dst,
    gateway: fc.oneof(addr, fc.constant(7)),
    dev: fc.constantFrom("eth0", "eth1", "lo", ""),
    table: fc.constantFrom("main", "local", "100", "bogus", 5),
    protocol: fc.constantFrom("kernel", "boot", "static", 99),
    scope: fc.constantFrom("global", "link", "host", "253", "x", 200),
    metric: fc.constantFrom(0, 100, 1024, "7"),
    prefsrc: fc.oneof(addr, fc.constant(null)),
    flags: fc.oneof(fc.constantFrom([], ["onlink"], ["linkdown", "onlink"]), fc.constant("onlink")),
    pref: fc.constantFrom("medium", "high"),
    metrics: fc.constantFrom([], [{ mtu: 1400 }], [null, { mtu: 9000 }], [{ mtu: "x" }], {}),
    nexthops: fc.constantFrom([{ dev: "eth2" }], [null, { dev: "eth3" }], [{}], "x"),
  },
  { requiredKeys: [] },
);
const routeDoc = fc.array(fc.oneof(routeObject, fc.constantFrom(null, 1, "x", [])), {
  maxLength: 8,
});

describe("ip -json parsing against the version it replaced", () => {
  it("route lists: parseRoutes (both families, or one known) and parseAllTableRoutes", () => {
    fc.assert(
      fc.property(routeDoc, fc.constantFrom(undefined, 4 as const, 6 as const), (doc, fam) => {
        expect(outcome(() => parseRoutes(doc, fam))).toStrictEqual(
          outcome(() => v1.parseRoutes(doc, fam)),
        );
        // Multipath routes are carried as paths: the Kata-era parser is no oracle for them.
        const single = doc.filter((o) => !(o && typeof o === "object" && "nexthops" in o));
        expect(outcome(() => parseAllTableRoutes(single).map(asBefore))).toStrictEqual(
          outcome(() => v1.parseAllTableRoutes(single)),
        );
      }),
      { numRuns: 10_000 },
    );
  });

  it("canonicalDst on random destinations of both families", () => {
    fc.assert(
      fc.property(dst, fc.constantFrom(4 as const, 6 as const), (d, fam) => {
        expect(canonicalDst(d, fam)).toBe(v1.canonicalDst(d, fam));
      }),
      { numRuns: 20_000 },
    );
  });

  it("splitJsonDocuments on texts made of documents, whitespace and garbage", () => {
    const json = fc.oneof(
      routeDoc.map((d) => JSON.stringify(d)),
      routeDoc.map((d) => JSON.stringify(d, null, 1)), // documents over several lines
      fc.json(),
      fc.constantFrom('["a\\"]"]', '{"x":"[{"}', "[", "]", "}{", '"', "\\", "x"),
    );
    const piece = fc.oneof(
      json,
      json,
      fc.constantFrom("\n", "\n", " ", "\t", "\r\n", "\n\n"),
      fc.string({ maxLength: 3 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), fc.boolean(), (pieces, newlines) => {
        const text = pieces.join(newlines ? "\n" : "");
        expect(outcome(() => splitJsonDocuments(text))).toStrictEqual(
          outcome(() => v1.splitJsonDocuments(text)),
        );
      }),
      { numRuns: 20_000 },
    );
  });
});
