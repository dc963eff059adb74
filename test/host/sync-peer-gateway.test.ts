/**
 * test/podgen's seed 13 (intermittent): an IPv6 address with a peer and
 * gateway routes through that peer, made by one Apply. IPv6 puts the
 * peer's /128 route in a moment after the address (addrconf's work queue),
 * so a route through the peer in the same batch was refused ("No route to
 * host") and sync left it out, about one sync in three here. The agent now
 * runs such link lines first and waits (bounded) for the peer routes
 * before the rest. Four rounds, each a new peer and its routes in three
 * tables, each judged by independent complete reads of both namespaces
 * and by diff.
 */
import { afterEach, expect, it } from "vitest";
import { MirrorPair } from "./complete-helpers";

let pair: MirrorPair | undefined;
afterEach(async () => {
  await pair?.remove();
  pair = undefined;
});

it("routes through an IPv6 peer address made in the same Apply are mirrored", async () => {
  pair = await MirrorPair.create();
  const p = pair;
  const ip = (...a: string[]) => p.pod.ip(...a);
  for (let round = 1; round <= 4; round++) {
    const peer = `fd00:5::${round}`;
    await ip("-6", "addr", "flush", "dev", "eth0", "scope", "global");
    await ip("-6", "addr", "add", "fd00:5::a", "peer", `${peer}/128`, "nodad", "dev", "eth0");
    const hops = [
      "nexthop",
      "via",
      "fe80::9",
      "dev",
      "eth0",
      "nexthop",
      "via",
      peer,
      "dev",
      "eth0",
    ];
    await ip("-6", "route", "replace", "2001:db8:1::/48", "via", peer, "dev", "eth0");
    await ip("-6", "route", "replace", "2001:db8:2::/48", "table", "100", ...hops);
    await ip("-6", "route", "replace", "2001:db8:3::/48", "via", peer, "table", "200");
    const s = await p.sync();
    expect(s.code, `round ${round}: ${s.stdout}${s.stderr}`).toBe(0);
    expect((await p.judge()).map((d) => d.text)).toEqual([]);
    const d = await p.diff();
    expect(d.stdout).toMatch(/^verdict: EQUAL/m);
    const routes = await p.guest.ns.json<{ dst: string; gateway?: string }[]>(
      "-6",
      "route",
      "show",
      "table",
      "all",
    );
    for (const dst of ["2001:db8:1::/48", "2001:db8:2::/48", "2001:db8:3::/48"])
      expect(routes.map((r) => r.dst)).toContain(dst);
  }
}, 180_000);
