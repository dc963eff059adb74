/** Neighbour lines: `neigh replace` and the lines that undo a batch of them. */
import { describe, expect, it } from "vitest";
import type { Neighbor } from "../../src/net/model";
import {
  type NeighborEntry,
  planNeighborRestore,
  renderNeighborReplace,
} from "../../src/net/plan-neighbors";
import { UnsafeTokenError } from "../../src/net/render-batch";

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
