/**
 * plan-culprit.ts: every line planApply writes for an element of the
 * desired state names that element's field (a best-effort Apply leaves it
 * out by it); lines that write no desired element (deletes, renames, up)
 * name none. withoutFields leaves exactly the named elements out.
 */
import { describe, expect, it } from "vitest";
import type { DesiredState, FullState } from "../../src/net/model/full-state";
import type { Link } from "../../src/net/model/model";
import { planApply } from "../../src/net/plan/plan-apply";
import { culpritOf, withoutFields } from "../../src/net/plan/plan-culprit";
import type { Rule } from "../../src/net/plan/rules";
import { route } from "../support/routes";

const MAC = "02:00:00:00:00:01";
const gst0: Link = {
  index: 2,
  name: "gst0",
  mac: MAC,
  mtu: 1500,
  flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
  kind: "veth",
  addresses: [{ family: 4, address: "10.9.0.2", prefix: 24, scope: "global" }],
};

const rule = (over: Partial<Rule>): Rule => ({
  family: 4,
  priority: 100,
  not: false,
  action: "lookup",
  table: 100,
  ...over,
});

const current: FullState = {
  links: [gst0],
  routes: [
    route({ dst: "10.9.0.0/24", dev: "gst0", scope: 253, protocol: "kernel", prefsrc: "10.9.0.2" }),
  ],
  rules: [rule({ priority: 50 })],
  neighbors: [],
  sysctls: new Map(),
};

const desired: DesiredState = {
  links: [
    {
      mac: MAC,
      name: "eth0",
      mtu: 1400,
      noarp: false,
      up: true,
      addresses: [
        { family: 4, address: "10.1.0.2", prefix: 24 },
        { family: 6, address: "fd00::2", prefix: 64 },
      ],
    },
  ],
  routes: [
    route({ dst: "10.1.0.0/24", scope: 253, prefsrc: "10.1.0.2" }),
    route({ gateway: "10.1.0.1", table: 100 }),
    route({ family: 6, dst: "fd01::/64", gateway: "fd00::1", metric: 1024 }),
  ],
  rules: [rule({ src: "10.1.0.2/32" }), rule({ family: 6, priority: 101, src: "fd00::/64" })],
  neighbors: [
    { family: 4, ip: "10.1.0.1", dev: "eth0", lladdr: "02:00:00:00:00:09", router: true },
  ],
  sysctls: [],
  nexthops: [],
};

describe("culpritOf", () => {
  const plan = planApply(current, desired, { exact: true });
  const named = (lines: readonly string[]) =>
    lines.map((l) => [l, culpritOf(l, desired, new Set(), current.links)] as const);

  it("names the element of every line that writes one, and none for the others", () => {
    const fields = new Map([...named(plan.batch), ...named(plan.batch6.map((l) => `-6 ${l}`))]);
    const byField = [...fields].filter(([, f]) => f !== undefined).map(([, f]) => f);
    expect(new Set(byField)).toEqual(
      new Set([
        "desired.interfaces[0].mtu",
        "desired.interfaces[0].addresses[0]",
        "desired.interfaces[0].addresses[1]",
        "desired.routes[0]",
        "desired.routes[1]",
        "desired.routes[2]",
        "desired.rules[0]",
        "desired.rules[1]",
        "desired.neighbors[0]",
      ]),
    );
    for (const [line, field] of fields) {
      if (/^(addr del|route del|link set dev \S+ (down|up|name)|-6 rule del|rule del)/.test(line))
        expect(field, line).toBeUndefined();
    }
  });

  it("an element left out already is not named again; an unknown line names nothing", () => {
    const line = plan.batch.find((l) => l.startsWith("addr add fd00::2/64")) as string;
    expect(
      culpritOf(line, desired, new Set(["desired.interfaces[0].addresses[1]"]), current.links),
    ).toBeUndefined();
    expect(
      culpritOf(
        "route replace 192.0.2.0/24 dev eth0 scope 0 metric 0 table main",
        desired,
        new Set(),
        current.links,
      ),
    ).toBeUndefined();
  });
});

describe("withoutFields", () => {
  it("leaves out exactly the fields named; a link's mtu is kept as it is (0)", () => {
    const w = withoutFields(
      desired,
      new Set([
        "desired.routes[1]",
        "desired.rules[0]",
        "desired.neighbors[0]",
        "desired.interfaces[0].mtu",
        "desired.interfaces[0].addresses[0]",
      ]),
    );
    expect(w.routes).toEqual([desired.routes[0], desired.routes[2]]);
    expect(w.rules).toEqual([desired.rules[1]]);
    expect(w.neighbors).toEqual([]);
    expect(w.links[0]?.mtu).toBe(0);
    expect(w.links[0]?.addresses).toEqual([desired.links[0]?.addresses[1]]);
    expect(withoutFields(desired, new Set())).toBe(desired);
  });
});
