/**
 * The rule for tentative addresses (src/host/usable-addresses.ts): which
 * guest addresses hold a verdict back, the bounded wait on them, and the
 * words sync and diff print.
 */
import { describe, expect, it } from "vitest";
import { usableSection } from "../../../src/host/compare/complete-report";
import {
  inDetection,
  unusableInGuest,
  waitedWords,
  waitUntilUsable,
} from "../../../src/host/compare/usable-addresses";

const MAC = "62:f5:74:89:88:1f";
const LL = "fe80::60f5:74ff:fe89:881f";

const UP = ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"];
const link = (
  ifname: string,
  addrs: { local: string; prefixlen?: number; tentative?: boolean; dadfailed?: boolean }[],
  mac = MAC,
  flags = UP,
) => ({
  ifname,
  address: mac,
  flags,
  addr_info: addrs.map((a) => ({ prefixlen: 64, ...a })),
});

describe("unusableInGuest", () => {
  it("a guest address tentative where the pod's is usable holds the verdict back", () => {
    const pod = [link("eth0", [{ local: "2001:db8::2" }, { local: LL }])];
    const guest = [link("eth0", [{ local: "2001:db8::2" }, { local: LL, tentative: true }])];
    expect(unusableInGuest(pod, guest)).toEqual([
      { link: "eth0", address: `${LL}/64`, dadFailed: false },
    ]);
  });

  it("is excused when the pod's own is tentative too", () => {
    const pod = [link("eth0", [{ local: "2001:db8::2", tentative: true }])];
    const guest = [link("eth0", [{ local: "2001:db8::2", tentative: true }])];
    expect(unusableInGuest(pod, guest)).toEqual([]);
  });

  it("pairs the kernel's own link-locals with each other (made from other MACs)", () => {
    const other = "fe80::1cff:aaff:febb:ccdd";
    const pod = [link("eth0", [{ local: LL, tentative: true }])];
    const guest = [link("eth0", [{ local: other, tentative: true }])];
    expect(unusableInGuest(pod, guest)).toEqual([]);
    // A link-local the pod configured itself is paired by its address.
    const podSet = [link("eth0", [{ local: "fe80::1", tentative: true }])];
    const guestSet = [link("eth0", [{ local: "fe80::2", tentative: true }])];
    expect(unusableInGuest(podSet, guestSet)).toHaveLength(1);
  });

  it("judges only mirrored links, paired by MAC whatever their names", () => {
    const pod = [link("eth0", [{ local: "2001:db8::2" }])];
    const guest = [
      link("gst0", [{ local: "2001:db8::2", tentative: true }]),
      link("other", [{ local: "2001:db8::9", tentative: true }], "02:00:00:00:00:09"),
      link("lo", [{ local: "::1", tentative: true }], "00:00:00:00:00:00"),
    ];
    expect(unusableInGuest(pod, guest).map((u) => u.link)).toEqual(["gst0"]);
  });

  it("notes a failed duplicate address detection", () => {
    const pod = [link("eth0", [{ local: "2001:db8::2" }])];
    const guest = [link("eth0", [{ local: "2001:db8::2", tentative: true, dadfailed: true }])];
    expect(unusableInGuest(pod, guest)[0]?.dadFailed).toBe(true);
  });

  it("takes whatever a guest sends without throwing", () => {
    const odd = [null, 7, { address: MAC, addr_info: "x" }, { address: MAC, addr_info: [null] }];
    expect(() => unusableInGuest([link("eth0", [])], odd)).not.toThrow();
  });
});

describe("inDetection", () => {
  it("lists either side's tentative addresses on a mirrored link up with carrier, the pod's marked", () => {
    const pod = [link("eth0", [{ local: LL, tentative: true }, { local: "2001:db8::2" }])];
    const guest = [link("gst0", [{ local: "2001:db8::2", tentative: true }])];
    expect(inDetection(pod, guest)).toEqual([
      { link: "gst0", address: "2001:db8::2/64", dadFailed: false },
      { link: "eth0", address: `${LL}/64`, dadFailed: false, side: "pod" },
    ]);
  });

  it("leaves out links down or without carrier (detection waits there), failed ones, and unmirrored links", () => {
    const down = ["BROADCAST", "MULTICAST"];
    const noCarrier = ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"];
    const t = [{ local: LL, tentative: true }];
    const pod = [link("eth0", t, MAC, down), link("eth1", t, "02:00:00:00:00:01", noCarrier)];
    const guest = [
      link("eth0", t, MAC, down),
      link("eth1", t, "02:00:00:00:00:01", noCarrier),
      link("eth2", [{ local: LL, tentative: true, dadfailed: true }], "02:00:00:00:00:02"),
      link("eth3", t, "02:00:00:00:00:03"),
    ];
    const withEth2 = [...pod, link("eth2", [], "02:00:00:00:00:02")];
    expect(inDetection(withEth2, guest)).toEqual([]);
  });
});

describe("waitUntilUsable", () => {
  const pod = [link("eth0", [{ local: LL }])];
  const tentative = [link("eth0", [{ local: LL, tentative: true }])];
  const usable = [link("eth0", [{ local: LL }])];

  it("reads until nothing is tentative, and says what it waited for", async () => {
    let reads = 0;
    const w = await waitUntilUsable(
      async () => ({ pod, guest: ++reads < 4 ? tentative : usable }),
      { pollMs: 1 },
    );
    expect(reads).toBe(4);
    expect(w.still).toEqual([]);
    expect(w.waitedFor).toEqual([{ link: "eth0", address: `${LL}/64`, dadFailed: false }]);
    expect(w.waitedMs).toBeGreaterThan(0);
    expect(waitedWords(w)).toMatch(
      new RegExp(
        `^waited \\d+\\.\\d s for the guest's ${LL}/64 on eth0 to leave duplicate address detection$`,
      ),
    );
  });

  it("waits for the pod's own detection too, where the pod's tentative excuses the guest's", async () => {
    const both = [link("eth0", [{ local: LL, tentative: true }])];
    let reads = 0;
    const w = await waitUntilUsable(
      async () => (++reads < 3 ? { pod: both, guest: both } : { pod, guest: usable }),
      { pollMs: 1 },
    );
    expect(reads).toBe(3);
    expect(w.still).toEqual([]);
    expect(waitedWords(w)).toMatch(
      new RegExp(
        `^waited \\d+\\.\\d s for the guest's ${LL}/64 on eth0, and the pod's ${LL}/64 on eth0, to leave duplicate address detection$`,
      ),
    );
  });

  it("gives up at its limit and names what is still tentative", async () => {
    const w = await waitUntilUsable(async () => ({ pod, guest: tentative }), {
      limitMs: 30,
      pollMs: 5,
    });
    expect(w.waitedMs).toBeGreaterThanOrEqual(30);
    expect(w.still).toHaveLength(1);
    expect(usableSection(w)?.rows).toEqual([
      {
        mark: "~",
        pod: `still tentative: ${LL}/64 on eth0 (the pod's is usable)`,
        guest: "tentative",
      },
    ]);
  });

  it("does not wait for nothing, nor for a failed detection, nor on an agent without Read", async () => {
    const failed = [link("eth0", [{ local: LL, tentative: true, dadfailed: true }])];
    const failedRead = async () => ({ pod, guest: failed });
    for (const read of [async () => ({ pod, guest: usable }), failedRead, async () => undefined]) {
      let reads = 0;
      const counted = async () => {
        reads++;
        return read();
      };
      const w = await waitUntilUsable(counted, { limitMs: 60_000 });
      expect(reads).toBe(1);
      expect(w.waitedFor).toEqual([]);
      // A failed detection is still a difference, named; nothing else is.
      const section = usableSection(w);
      if (read === failedRead)
        expect(section?.rows.map((r) => r.guest)).toEqual(["tentative dadfailed"]);
      else expect(section).toBeUndefined();
    }
  });
});
