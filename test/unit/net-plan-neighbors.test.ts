/** Neighbour lines: `neigh replace` and the lines that undo a batch of them. */
import { describe, expect, it } from "vitest";
import type { Neighbor } from "../../src/net/model/model";
import {
  type NeighborEntry,
  neighboursNotRestored,
  planNeighborRestore,
  renderNeighborReplace,
} from "../../src/net/plan/plan-neighbors";
import { UnsafeTokenError } from "../../src/net/plan/render-batch";

const entry = (over: Partial<NeighborEntry> = {}): NeighborEntry => ({
  ip: "10.0.0.1",
  dev: "eth0",
  lladdr: "02:00:00:00:00:02",
  nud: "permanent",
  router: false,
  externLearned: false,
  ...over,
});

const seen = (over: Partial<Neighbor> = {}): Neighbor => ({
  family: 4,
  ip: "10.0.0.1",
  dev: "eth0",
  lladdr: "02:00:00:00:00:09",
  state: ["REACHABLE"],
  router: false,
  ...over,
});

describe("renderNeighborReplace", () => {
  it.each<[Partial<NeighborEntry>, string]>([
    [{}, "neigh replace 10.0.0.1 lladdr 02:00:00:00:00:02 dev eth0 nud permanent"],
    [
      { ip: "2001:db8::1", nud: "reachable", router: true },
      "neigh replace 2001:db8::1 lladdr 02:00:00:00:00:02 dev eth0 nud reachable router",
    ],
    [
      { lladdr: "", nud: "stale", externLearned: true },
      "neigh replace 10.0.0.1 dev eth0 nud stale extern_learn",
    ],
  ])("%j", (over, line) => {
    expect(renderNeighborReplace(entry(over))).toBe(line);
  });

  it("refuses a device that would inject a command", () => {
    expect(() => renderNeighborReplace(entry({ dev: "eth0\nlink set lo down" }))).toThrow(
      UnsafeTokenError,
    );
  });
});

describe("planNeighborRestore", () => {
  it("puts back an entry that was there, with its lladdr, state and router flag", () => {
    expect(planNeighborRestore([seen({ state: ["STALE"], router: true })], [entry()])).toEqual([
      "neigh replace 10.0.0.1 lladdr 02:00:00:00:00:09 dev eth0 nud stale router",
    ]);
  });

  it("deletes an entry that was not there, or was failed/incomplete/without lladdr", () => {
    const applied = [
      entry(),
      entry({ ip: "10.0.0.2" }),
      entry({ ip: "10.0.0.3" }),
      entry({ ip: "10.0.0.4" }),
    ];
    expect(
      planNeighborRestore(
        [
          seen({ ip: "10.0.0.2", lladdr: "", state: ["FAILED"] }),
          seen({ ip: "10.0.0.3", state: ["INCOMPLETE"] }),
          seen({ ip: "10.0.0.4", dev: "eth1" }),
        ],
        applied,
      ),
    ).toEqual([
      "neigh del 10.0.0.1 dev eth0",
      "neigh del 10.0.0.2 dev eth0",
      "neigh del 10.0.0.3 dev eth0",
      "neigh del 10.0.0.4 dev eth0",
    ]);
  });
});

describe("neighboursNotRestored", () => {
  const before = [seen({ ip: "fd00::1", family: 6, state: ["PERMANENT"], router: true })];
  const touched = [
    { ip: "fd00::1", dev: "eth0" },
    { ip: "10.0.0.7", dev: "eth0" },
  ];

  it("none when the old entry is back and the new one is gone, whatever the address's spelling", () => {
    const now = [
      seen({
        ip: "FD00:0::0001",
        family: 6,
        state: ["PERMANENT"],
        router: true,
        lladdr: "02:00:00:00:00:09".toUpperCase(),
      }),
    ];
    expect(neighboursNotRestored(before, touched, now)).toEqual([]);
  });

  it("a new entry still there, or one the kernel only left failed", () => {
    const old = seen({ ip: "fd00::1", family: 6, state: ["PERMANENT"], router: true });
    expect(
      neighboursNotRestored(before, touched, [old, seen({ ip: "10.0.0.7", state: ["PERMANENT"] })]),
    ).toEqual(["10.0.0.7 eth0"]);
    expect(
      neighboursNotRestored(before, touched, [
        old,
        seen({ ip: "10.0.0.7", state: ["FAILED"], lladdr: "" }),
      ]),
    ).toEqual([]);
  });

  it("an old entry missing, with another MAC, state or router flag", () => {
    const base = { ip: "fd00::1", family: 6 as const, state: ["PERMANENT"], router: true };
    expect(neighboursNotRestored(before, touched, [])).toEqual(["fd00::1 eth0"]);
    for (const over of [{ lladdr: "02:00:00:00:00:0a" }, { state: ["STALE"] }, { router: false }]) {
      expect(neighboursNotRestored(before, touched, [seen({ ...base, ...over })])).toEqual([
        "fd00::1 eth0",
      ]);
    }
  });
});
