/**
 * planLink, table-driven: the name (renames and swaps with a holder), MTU
 * and ARP. Its addresses and up state: net-plan-link-addresses.test.ts.
 */
import { describe, expect, it } from "vitest";
import { planLink, swapName } from "../../src/net/plan/plan-link";
import { DOWN, link, target, UP } from "../helpers/plan-link";

describe("planLink: names", () => {
  it("renames a link that is up: down, rename, up at the end", () => {
    const l = link(5, "eth9");
    expect(planLink([l], l, target({ name: "eth0" }))).toEqual([
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      "link set dev eth0 up",
    ]);
  });

  it("renames a link that is down without taking it down again", () => {
    const l = link(5, "eth9", { flags: DOWN });
    expect(planLink([l], l, target({ name: "eth0" }))).toEqual([
      "link set dev eth9 name eth0",
      "link set dev eth0 up",
    ]);
  });

  it("keeps the name when the target name is empty or already the link's", () => {
    const l = link(5, "eth0");
    expect(planLink([l], l, target())).toEqual([]);
    expect(planLink([l], l, target({ name: "eth0" }))).toEqual([]);
  });

  it("swaps with a holder that is up: the holder ends with the old name, up again", () => {
    const me = link(5, "eth9");
    const holder = link(3, "eth0");
    expect(planLink([holder, me], me, target({ name: "eth0" }))).toEqual([
      "link set dev eth0 down",
      `link set dev eth0 name ${swapName(3)}`,
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      `link set dev ${swapName(3)} name eth9`,
      "link set dev eth9 up",
      "link set dev eth0 up",
    ]);
  });

  it("swaps with a holder that is down: the holder stays down", () => {
    const me = link(5, "eth9");
    const holder = link(3, "eth0", { flags: DOWN });
    expect(planLink([holder, me], me, target({ name: "eth0" }))).toEqual([
      `link set dev eth0 name ${swapName(3)}`,
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      `link set dev ${swapName(3)} name eth9`,
      "link set dev eth0 up",
    ]);
  });

  it("makes swap names that fit in 15 bytes and start with a letter", () => {
    for (const i of [1, 42, 2 ** 31 - 1]) expect(swapName(i)).toMatch(/^[a-z][a-z0-9-]{0,14}$/);
  });
});

describe("planLink: MTU and ARP", () => {
  it.each([
    [0, 1500, []],
    [1500, 1500, []],
    [9000, 1500, ["link set dev eth0 mtu 9000"]],
    [1280, 9000, ["link set dev eth0 mtu 1280"]],
  ])("mtu %i on a link with %i", (mtu, current, lines) => {
    const l = link(2, "eth0", { mtu: current });
    expect(planLink([l], l, target({ mtu }))).toEqual(lines);
  });

  it.each([
    [true, UP, ["link set dev eth0 arp off"]],
    [false, UP, []],
    [true, [...UP, "NOARP"], []],
    [false, ["BROADCAST", "NOARP", "UP"], ["link set dev eth0 arp on"]],
  ])("noarp %s on flags %j", (noarp, flags, lines) => {
    const l = link(2, "eth0", { flags });
    expect(planLink([l], l, target({ noarp }))).toEqual(lines);
  });

  it("sets MTU and ARP on the new name after a rename", () => {
    const l = link(2, "eth9", { flags: DOWN });
    expect(planLink([l], l, target({ name: "eth0", mtu: 1400, noarp: true }))).toEqual([
      "link set dev eth9 name eth0",
      "link set dev eth0 mtu 1400",
      "link set dev eth0 arp off",
      "link set dev eth0 up",
    ]);
  });
});
