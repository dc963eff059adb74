/**
 * Nexthop objects (`ip nexthop add id N ...`): gateways per family (onlink
 * where no prefix route reaches them), a device-only one, a blackhole, and
 * groups with weights. Routes name them with `nhid` (gen-routes.ts).
 */
import { type GenState, onlinkGateway } from "./gen-state";

export function genNexthops(g: GenState): void {
  const { rng } = g;
  if (!rng.chance(0.35)) return;
  let id = rng.int(1, 20);
  const next = () => {
    id += rng.int(1, 30);
    return id;
  };
  for (const family of [4, 6] as const) {
    for (const n of g.withFamily(family).filter((x) => x.kind === "veth" || x.kind === "tap")) {
      const gws = family === 4 ? n.gw4 : n.gw6;
      for (let k = rng.int(0, 2); k > 0; k--) {
        const onlink = gws.length === 0 || rng.chance(0.15);
        const gw = gws.length && !onlink ? rng.pick(gws) : onlinkGateway(n, family);
        const nid = next();
        const tags = ["nexthop object", ...(onlink ? ["nexthop onlink"] : [])];
        g.ip(
          tags,
          "nexthop",
          "add",
          "id",
          String(nid),
          "via",
          gw,
          "dev",
          n.name,
          ...(onlink ? ["onlink"] : []),
        );
        g.nexthops.push({ id: nid, family, group: false, blackhole: false });
      }
    }
    const singles = g.nexthops.filter((h) => h.family === family && !h.group && !h.blackhole);
    if (singles.length >= 2 && rng.chance(0.6)) {
      const members = rng.shuffle(singles).slice(0, rng.int(2, singles.length));
      const spec = members.map((m) => (rng.chance(0.5) ? `${m.id},${rng.int(1, 10)}` : `${m.id}`));
      const nid = next();
      g.ip(["nexthop group"], "nexthop", "add", "id", String(nid), "group", spec.join("/"));
      g.nexthops.push({ id: nid, family, group: true, blackhole: false });
    }
  }
  const dev = g.veths().find((n) => n.addrs.some((a) => a.family === 4));
  if (dev && rng.chance(0.3)) {
    const nid = next();
    g.ip(["nexthop dev"], "nexthop", "add", "id", String(nid), "dev", dev.name);
    g.nexthops.push({ id: nid, family: 4, group: false, blackhole: false });
  }
  if (rng.chance(0.3)) {
    const nid = next();
    g.ip(["nexthop blackhole"], "nexthop", "add", "id", String(nid), "blackhole");
    g.nexthops.push({ id: nid, family: 4, group: false, blackhole: true });
  }
}
