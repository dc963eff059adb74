/**
 * The lookups' inputs: an address drawn inside a prefix stays inside it,
 * and the probes for a read and a seed are always the same ones, drawn from
 * what the read mentions.
 */
import { describe, expect, it } from "vitest";
import { expandV6 } from "./ignore";
import { Prng } from "./prng";
import { addressIn, makeProbes } from "./probes";
import type { NetnsRead } from "./read";

const v4int = (a: string) => a.split(".").reduce((s, x) => s * 256 + Number(x), 0);

describe("addressIn", () => {
  it("stays inside IPv4 and IPv6 prefixes of every length", () => {
    const rng = new Prng(1);
    for (let len = 0; len <= 32; len++) {
      for (let i = 0; i < 20; i++) {
        const a = addressIn(`10.20.30.40/${len}`, rng);
        const size = 2 ** (32 - len);
        expect(Math.floor(v4int(a) / size), `${a} in /${len}`).toBe(
          Math.floor(v4int("10.20.30.40") / size),
        );
      }
    }
    for (const len of [0, 7, 16, 48, 56, 64, 100, 127, 128]) {
      for (let i = 0; i < 20; i++) {
        const bits = (x: string) =>
          (expandV6(x) ?? []).map((g) => g.toString(2).padStart(16, "0")).join("");
        const a = addressIn(`fd12:3456:789a:bc00::1/${len}`, rng);
        expect(bits(a).slice(0, len), `${a} in /${len}`).toBe(
          bits("fd12:3456:789a:bc00::1").slice(0, len),
        );
      }
    }
  });
});

describe("makeProbes", () => {
  const read: NetnsRead = {
    links: [],
    addresses: [
      { ifname: "eth0", addr_info: [{ family: "inet", local: "10.1.2.3", prefixlen: 24 }] },
    ],
    routes: [{ family: "inet", dst: "172.16.0.0/12", gateway: "10.1.2.1", tos: "0x04" }],
    rules: [
      {
        family: "inet",
        priority: 100,
        fwmark: "0x10",
        ipproto: "tcp",
        dport_start: 80,
        dport_end: 90,
        uid_start: 5,
        uid_end: 9,
      },
    ],
    neighbours: [],
    nexthops: [],
    sysctls: new Map(),
  };

  it("is the same for the same read and seed, and draws from the read", () => {
    const a = makeProbes(read, 3, 300);
    expect(makeProbes(read, 3, 300)).toEqual(a);
    expect(makeProbes(read, 4, 300)).not.toEqual(a);
    const words = a.flatMap((p) => p.args);
    for (const w of [
      "10.1.2.1",
      "10.1.2.3",
      "iif",
      "oif",
      "eth0",
      "16",
      "tcp",
      "80",
      "90",
      "91",
      "5",
      "9",
      "10",
      "0x04",
    ]) {
      expect(words, w).toContain(w);
    }
    expect(a.every((p) => p.args[0] === "route" && p.args[1] === "get")).toBe(true);
  });
});
