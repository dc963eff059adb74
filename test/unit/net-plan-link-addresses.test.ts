/**
 * planLink, table-driven: the address set (removals first, subnets'
 * primaries and secondaries, exact mode), the up state, and what the
 * kernel takes with a down or a low MTU (IPv6 addresses put back).
 */
import { describe, expect, it } from "vitest";
import { planLink, swapName } from "../../src/net/plan/plan-link";
import { a, DOWN, link, target } from "../helpers/plan-link";

describe("planLink: addresses", () => {
  const l = link(2, "eth0", {
    addresses: [
      a(4, "10.0.0.2/24"),
      a(4, "10.0.0.9/24"),
      a(6, "2001:db8::9/64"),
      a(6, "fe80::1/64", "link"),
      a(4, "127.0.0.2/8", "host"),
    ],
  });

  it("removes unrequested global addresses first, keeps link-local and host scope, adds IPv6 with nodad", () => {
    expect(
      planLink(
        [l],
        l,
        target({ addresses: [a(4, "10.0.0.2/24"), a(6, "2001:db8::2/64"), a(4, "10.1.0.2/16")] }),
      ),
    ).toEqual([
      "addr del 2001:db8::9/64 dev eth0",
      "addr del 10.0.0.9/24 dev eth0",
      "addr add 2001:db8::2/64 dev eth0 nodad",
      "addr add 10.1.0.2/16 dev eth0",
    ]);
  });

  it("exact mode removes every address not listed, link-local included", () => {
    expect(
      planLink([l], l, target({ addresses: [a(4, "10.0.0.2/24")], exactAddresses: true })),
    ).toEqual([
      // Reverse order: secondaries before their primary.
      "addr del 127.0.0.2/8 dev eth0",
      "addr del fe80::1/64 dev eth0",
      "addr del 2001:db8::9/64 dev eth0",
      "addr del 10.0.0.9/24 dev eth0",
    ]);
  });

  it("puts back a kept IPv4 address of a subnet that loses one (the kernel drops secondaries with their primary)", () => {
    const two = link(2, "eth0", {
      addresses: [a(4, "10.0.0.2/24"), a(4, "10.0.0.9/24"), a(4, "10.1.0.2/16")],
    });
    expect(
      planLink([two], two, target({ addresses: [a(4, "10.0.0.9/24"), a(4, "10.1.0.2/16")] })),
    ).toEqual(["addr del 10.0.0.2/24 dev eth0", "addr replace 10.0.0.9/24 dev eth0"]);
    // Another subnet, or IPv6, is not touched.
    const v6 = link(2, "eth0", { addresses: [a(6, "2001:db8::2/64"), a(6, "2001:db8::9/64")] });
    expect(planLink([v6], v6, target({ addresses: [a(6, "2001:db8::9/64")] }))).toEqual([
      "addr del 2001:db8::2/64 dev eth0",
    ]);
  });

  it("removes a subnet's secondaries before its primary (the kernel drops them with it)", () => {
    const three = link(2, "eth0", {
      addresses: [a(4, "10.0.0.2/24"), a(4, "10.0.0.9/24"), a(4, "10.0.0.10/24")],
    });
    expect(planLink([three], three, target({ addresses: [a(4, "10.0.0.5/24")] }))).toEqual([
      "addr del 10.0.0.10/24 dev eth0",
      "addr del 10.0.0.9/24 dev eth0",
      "addr del 10.0.0.2/24 dev eth0",
      "addr add 10.0.0.5/24 dev eth0",
    ]);
  });

  it("exact mode gives a subnet its old primary back, rebuilding it in the listed order", () => {
    const swapped = link(2, "eth0", {
      addresses: [a(4, "10.0.0.9/24"), a(4, "10.0.0.2/24"), a(4, "10.1.0.2/16")],
    });
    const want = [a(4, "10.0.0.2/24"), a(4, "10.0.0.9/24"), a(4, "10.1.0.2/16")];
    expect(planLink([swapped], swapped, target({ addresses: want, exactAddresses: true }))).toEqual(
      [
        "addr del 10.0.0.2/24 dev eth0",
        "addr del 10.0.0.9/24 dev eth0",
        "addr add 10.0.0.2/24 dev eth0",
        "addr add 10.0.0.9/24 dev eth0",
      ],
    );
    // A request (not exact) leaves the order alone.
    expect(planLink([swapped], swapped, target({ addresses: want }))).toEqual([]);
  });

  it("treats a changed prefix as another address", () => {
    const one = link(2, "eth0", { addresses: [a(4, "10.0.0.2/24")] });
    expect(planLink([one], one, target({ addresses: [a(4, "10.0.0.2/16")] }))).toEqual([
      "addr del 10.0.0.2/24 dev eth0",
      "addr add 10.0.0.2/16 dev eth0",
    ]);
  });

  it("removes on the old name, adds on the new one and brings the link up at the very end", () => {
    const down = link(2, "eth9", { flags: DOWN, addresses: [a(4, "10.0.0.9/24")] });
    const lines = planLink([down], down, target({ name: "eth0", addresses: [a(6, "fd00::2/64")] }));
    expect(lines).toEqual([
      "addr del 10.0.0.9/24 dev eth9",
      "link set dev eth9 name eth0",
      "addr add fd00::2/64 dev eth0 nodad",
      "link set dev eth0 up",
    ]);
  });

  it("takes a link down when the target says so (restores), only once", () => {
    const up = link(2, "eth0");
    expect(planLink([up], up, target({ up: false }))).toEqual(["link set dev eth0 down"]);
    expect(planLink([up], up, target({ up: false, name: "eth1" }))).toEqual([
      "link set dev eth0 down",
      "link set dev eth0 name eth1",
    ]);
    const down = link(2, "eth0", { flags: DOWN });
    expect(planLink([down], down, target({ up: false }))).toEqual([]);
    expect(planLink([down], down, target())).toEqual(["link set dev eth0 up"]);
  });
});

describe("planLink: what the kernel takes with a down or a low MTU", () => {
  const v6 = [a(4, "10.0.0.2/24"), a(6, "fd00::2/64"), a(6, "fe80::2/64", "link")];

  it("a rename puts back the IPv6 addresses still wanted (replace: keep_addr_on_down may have kept them); IPv4 stays", () => {
    const l = link(2, "eth9", { addresses: v6 });
    const want = [a(4, "10.0.0.2/24"), a(6, "fd00::2/64")];
    expect(planLink([l], l, target({ name: "eth0", addresses: want }))).toEqual([
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      "addr replace fd00::2/64 dev eth0 nodad",
      "link set dev eth0 up",
    ]);
  });

  it("removes an IPv6 address before the down that would take it (a later 'addr del' fails)", () => {
    const l = link(2, "eth9", { addresses: v6 });
    expect(planLink([l], l, target({ name: "eth0", addresses: [a(6, "fd00::5/64")] }))).toEqual([
      "addr del fd00::2/64 dev eth9",
      "addr del 10.0.0.2/24 dev eth9",
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      "addr add fd00::5/64 dev eth0 nodad",
      "link set dev eth0 up",
    ]);
  });

  it("a holder that was up gets its IPv6 addresses back, link-local aside, before it comes up", () => {
    const me = link(5, "eth9", { flags: DOWN });
    const holder = link(3, "eth0", { addresses: v6 });
    expect(planLink([holder, me], me, target({ name: "eth0" }))).toEqual([
      "link set dev eth0 down",
      `link set dev eth0 name ${swapName(3)}`,
      "link set dev eth9 name eth0",
      `link set dev ${swapName(3)} name eth9`,
      "addr replace fd00::2/64 dev eth9 nodad",
      "link set dev eth9 up",
      "link set dev eth0 up",
    ]);
    // One that was down was not taken down: nothing to put back.
    const downHolder = { ...holder, flags: DOWN };
    expect(planLink([downHolder, me], me, target({ name: "eth0" }))).not.toContainEqual(
      expect.stringMatching(/^addr/),
    );
  });

  it("an MTU below 1280 drops IPv6: the wanted addresses are put back (the kernel refuses: the call fails)", () => {
    const l = link(2, "eth0", { addresses: v6 });
    const want = [a(4, "10.0.0.2/24"), a(6, "fd00::2/64")];
    expect(planLink([l], l, target({ mtu: 1000, addresses: want }))).toEqual([
      "link set dev eth0 mtu 1000",
      "addr replace fd00::2/64 dev eth0 nodad",
    ]);
    expect(planLink([l], l, target({ mtu: 1280, addresses: want }))).toEqual([
      "link set dev eth0 mtu 1280",
    ]);
  });

  it("puts an address back as it was: noprefixroute, metric", () => {
    const l = link(2, "eth9", {
      addresses: [{ ...a(6, "fd00::2/64"), noprefixroute: true, metric: 77 }],
    });
    expect(planLink([l], l, target({ name: "eth0", addresses: [a(6, "fd00::2/64")] }))).toContain(
      "addr replace fd00::2/64 metric 77 noprefixroute dev eth0 nodad",
    );
  });

  it("a restore that takes a link down does it first and puts back every IPv6 address after, link-local too", () => {
    // Without nodad: on a link that stays down an address is tentative, as the kernel has it there.
    const l = link(2, "eth9", { addresses: v6 });
    expect(
      planLink([l], l, target({ name: "eth0", up: false, addresses: v6, exactAddresses: true })),
    ).toEqual([
      "link set dev eth9 down",
      "link set dev eth9 name eth0",
      "addr replace fd00::2/64 dev eth0",
      "addr replace fe80::2/64 dev eth0",
    ]);
    expect(planLink([l], l, target({ up: false, addresses: v6, exactAddresses: true }))).toEqual([
      "link set dev eth9 down",
      "addr replace fd00::2/64 dev eth9",
      "addr replace fe80::2/64 dev eth9",
    ]);
  });

  it("an address with nodad of its own on a link that stays down keeps it (usable, with its local route); one without stays tentative", () => {
    const own = { ...a(6, "fd00:1::2/64"), attrs: [["nodad", "on"] as const] };
    const l = link(2, "eth9", { addresses: [] });
    const want = [own, a(6, "fd00:2::2/64")];
    const exact = { exactAddresses: true, exactAttrs: true };
    expect(planLink([l], l, target({ up: false, addresses: want, ...exact }))).toEqual([
      "link set dev eth9 down",
      "addr replace fd00:2::2/64 dev eth9",
      "addr replace fd00:1::2/64 nodad dev eth9",
    ]);
    // On a link that is up: nodad once.
    expect(planLink([l], l, target({ addresses: [own], ...exact }))).toEqual([
      "addr replace fd00:1::2/64 nodad dev eth9",
    ]);
  });
});
