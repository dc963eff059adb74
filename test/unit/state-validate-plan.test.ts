/**
 * The allowed sysctl set (no key maps outside /proc/sys/net), Apply request
 * validation (INVALID_ARGUMENT naming field and value, bounds), the link
 * phase's rename bookkeeping and the plan in words.
 */
import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LIMITS, validateApply } from "../../src/agent/validate/validate-state";
import { ApplyRequestSchema } from "../../src/gen/network_pb";
import { describePlanLine, renderPlan } from "../../src/host/print/plan-words";
import { currentKey } from "../../src/net/plan/plan-apply";
import { planLinkPhase } from "../../src/net/plan/plan-link-phase";
import { parseSysctlKey, sysctlValueProblem } from "../../src/net/sysctl/sysctl-keys";
import { Code, type TtrpcError } from "../../src/ttrpc/codes";

describe("the allowed sysctl set", () => {
  it("maps per-interface and namespaced keys below /proc/sys/net", () => {
    expect(parseSysctlKey("net.ipv4.conf.eth0.rp_filter")).toMatchObject({
      path: "/proc/sys/net/ipv4/conf/eth0/rp_filter",
      iface: "eth0",
      pattern: "net.ipv4.conf.*.rp_filter",
    });
    expect(parseSysctlKey("net.ipv6.neigh.eth0.100.base_reachable_time_ms")).toMatchObject({
      path: "/proc/sys/net/ipv6/neigh/eth0.100/base_reachable_time_ms",
    });
    expect(parseSysctlKey("net.core.somaxconn")).toMatchObject({
      path: "/proc/sys/net/core/somaxconn",
    });
  });

  it("a link with dots in its name: sysctl(8) spells them as /, which is the key's name either way", () => {
    const want = {
      key: "net.ipv4.conf.vnic/a-b_c.rp_filter",
      path: "/proc/sys/net/ipv4/conf/vnic.a-b_c/rp_filter",
      iface: "vnic.a-b_c",
      pattern: "net.ipv4.conf.*.rp_filter",
    };
    expect(parseSysctlKey("net.ipv4.conf.vnic/a-b_c.rp_filter")).toEqual(want);
    expect(parseSysctlKey("net.ipv4.conf.vnic.a-b_c.rp_filter")).toEqual(want);
    expect(parseSysctlKey("net.ipv6.neigh.eth0/100.base_reachable_time_ms")).toMatchObject({
      key: "net.ipv6.neigh.eth0/100.base_reachable_time_ms",
      path: "/proc/sys/net/ipv6/neigh/eth0.100/base_reachable_time_ms",
    });
  });

  it("refuses keys outside the set and any that would leave /proc/sys/net", () => {
    for (const k of [
      "kernel.hostname",
      "net.ipv4.conf.eth0/../../../../kernel.hostname",
      "net.ipv4.conf.../x",
      "net.ipv4.conf...rp_filter",
      "net.ipv4.conf.eth0.",
      "net.ipv4.conf..rp_filter",
      "net.ipv4.conf.-x.rp_filter",
      "net.core.rmem_max",
      "net.netfilter.nf_conntrack_max",
      "net.ipv4.conf.eth0.RP_FILTER",
    ]) {
      expect(typeof parseSysctlKey(k), k).toBe("string");
    }
  });

  it("a refused key is told the rule, not a source file (a user has none)", () => {
    const why = parseSysctlKey("kernel.hostname") as string;
    expect(why).not.toMatch(/src\/|\.ts\b/);
    expect(why).toMatch(
      /^is not a network-namespaced sysctl this agent manages: it takes net\.ipv4\.conf\.IFACE\.KEY, net\.ipv6\.conf\.IFACE\.KEY, net\.ipv4\.neigh\.IFACE\.KEY, net\.ipv6\.neigh\.IFACE\.KEY \(IFACE a link name, "all" or "default"\) and the keys net\.ipv4\.ip_local_port_range, /,
    );
    // Every key it names is one it takes.
    const named = why.slice(why.indexOf("the keys ") + 9).split(", ");
    expect(named).toContain("net.core.somaxconn");
    for (const k of named) expect(typeof parseSysctlKey(k), k).toBe("object");
  });

  it("property: every accepted key's path is a plain path below /proc/sys/net", () => {
    const part = fc.stringMatching(/^[A-Za-z0-9_./-]{0,20}$/);
    fc.assert(
      fc.property(
        fc.constantFrom("net.ipv4.conf.", "net.ipv6.neigh.", "net.", ""),
        part,
        part,
        (a, b, c) => {
          const k = parseSysctlKey(`${a}${b}.${c}`);
          if (typeof k === "string") return;
          expect(k.path.startsWith("/proc/sys/net/")).toBe(true);
          expect(k.path.split("/")).not.toContain("..");
          expect(k.path.split("/")).not.toContain(".");
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("values: one line of printable text, bounded", () => {
    expect(sysctlValueProblem("4096\t131072\t6291456")).toBeUndefined();
    expect(sysctlValueProblem("1\n2")).toBeDefined();
    expect(sysctlValueProblem("x".repeat(257))).toBeDefined();
    expect(sysctlValueProblem("$(reboot)")).toBeDefined();
  });
});

function invalid(desired: Record<string, unknown>): TtrpcError {
  try {
    validateApply(create(ApplyRequestSchema, { desired }));
  } catch (err) {
    return err as TtrpcError;
  }
  throw new Error("accepted");
}

describe("validateApply", () => {
  it("checks an MTU with the Kata validators' words; 0 is the kernel's default", () => {
    const mtu = (m: number) => invalid({ interfaces: [{ mac: "02:00:00:00:00:01", mtu: m }] });
    expect(mtu(20).message).toBe("desired.interfaces[0].mtu: 20 is below 68");
    expect(mtu(65536).message).toBe("desired.interfaces[0].mtu: 65536 is above 65535");
    expect(() => mtu(0)).toThrow("accepted");
  });

  it("names the field and the value", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ interfaces: [{ mac: "zz" }] }, 'desired.interfaces[0].mac: "zz"'],
      [
        { interfaces: [{ mac: "02:00:00:00:00:01", name: "lo" }] },
        'desired.interfaces[0].name: "lo"',
      ],
      [{ interfaces: [{ mac: "02:00:00:00:00:01", mtu: 20 }] }, "desired.interfaces[0].mtu: 20"],
      [
        {
          interfaces: [
            {
              mac: "02:00:00:00:00:01",
              mtu: 1000,
              addresses: [
                { address: "10.0.0.1", prefix: 24 },
                { address: "2001:db8::1", prefix: 64 },
              ],
            },
          ],
        },
        "desired.interfaces[0].mtu: 1000 is below 1280, the least MTU IPv6 takes, and desired.interfaces[0].addresses[1].address is IPv6 (2001:db8::1)",
      ],
      [
        {
          interfaces: [
            { mac: "02:00:00:00:00:01", addresses: [{ address: "10.0.0.1", prefix: 40 }] },
          ],
        },
        "desired.interfaces[0].addresses[0].prefix: 40",
      ],
      [{ routes: [{ dest: "10.0.0.0/8" }] }, 'desired.routes[0].device: ""'],
      [
        { routes: [{ dest: "10.0.0.0/8", device: "eth0", gateway: "::1" }] },
        'desired.routes[0].gateway: "::1"',
      ],
      [
        { routes: [{ dest: "10.0.0.0/8", device: "eth0", family: 5 }] },
        "desired.routes[0].family: 5",
      ],
      [
        { routes: [{ dest: "10.0.0.0/8", device: "eth0", protocol: "x y" }] },
        'desired.routes[0].protocol: "x y"',
      ],
      [
        { routes: [{ dest: "10.0.0.0/8", type: 1, gateway: "10.0.0.1" }] },
        'desired.routes[0].gateway: "10.0.0.1"',
      ],
      [
        { rules: [{ priority: 1, from: "10.0.0.0/8", to: "2001:db8::/32" }] },
        'desired.rules[0].to: "2001:db8::/32"',
      ],
      [{ rules: [{ priority: 1, action: 2, table: 100 }] }, "desired.rules[0].table: 100"],
      [
        { neighbors: [{ address: "10.0.0.1", device: "eth0", lladdr: "" }] },
        'desired.neighbors[0].lladdr: ""',
      ],
      [
        {
          sysctls: [
            { key: "net.core.somaxconn", value: "1" },
            { key: "net.core.somaxconn", value: "2" },
          ],
        },
        'desired.sysctls[1].key: "net.core.somaxconn" is listed twice',
      ],
      [
        {
          sysctls: [
            { key: "net.ipv4.conf.vnic/a.rp_filter", value: "1" },
            { key: "net.ipv4.conf.vnic.a.rp_filter", value: "2" },
          ],
        },
        'desired.sysctls[1].key: "net.ipv4.conf.vnic.a.rp_filter" is listed twice',
      ],
    ];
    for (const [desired, text] of cases) {
      const err = invalid(desired);
      expect(err.code, err.message).toBe(Code.INVALID_ARGUMENT);
      expect(err.message).toContain(text);
    }
  });

  it("bounds every list", () => {
    const sysctls = Array.from({ length: LIMITS.sysctls + 1 }, (_, i) => ({
      key: `net.ipv4.conf.e${i}.rp_filter`,
      value: "1",
    }));
    expect(invalid({ sysctls }).message).toContain(`desired.sysctls: ${LIMITS.sysctls + 1}`);
  });

  it("normalises: table 0 is main, IPv6 metric 0 is 1024, host bits cleared, /0 rule prefixes are all", () => {
    const d = validateApply(
      create(ApplyRequestSchema, {
        desired: {
          routes: [{ dest: "2001:db8::1/64", device: "eth0" }],
          rules: [{ priority: 5, from: "0.0.0.0/0", table: 100 }],
        },
      }),
    );
    expect(d.routes[0]).toMatchObject({
      table: 254,
      dst: "2001:db8::/64",
      metric: 1024,
      family: 6,
    });
    expect(d.rules[0]).toEqual({
      family: 4,
      priority: 5,
      not: false,
      action: "lookup",
      table: 100,
    });
  });
});

describe("planLinkPhase and sysctl keys across a rename", () => {
  it("knows each link's former name, so sysctls are read and restored where the link is now", () => {
    const link = (index: number, name: string, mac: string) => ({
      index,
      name,
      mac,
      mtu: 1500,
      flags: ["UP"],
      kind: "veth",
      addresses: [],
    });
    const phase = planLinkPhase(
      [link(2, "gst0", "02:00:00:00:00:01"), link(3, "eth0", "02:00:00:00:00:02")],
      [{ mac: "02:00:00:00:00:01", name: "eth0", mtu: 0, noarp: false, up: true, addresses: [] }],
    );
    expect(phase.formerName.get("eth0")).toBe("gst0");
    expect(phase.formerName.get("gst0")).toBe("eth0");
    expect(phase.downed).toEqual(new Set(["gst0", "eth0"]));
    expect(currentKey("net.ipv4.conf.eth0.rp_filter", phase.formerName)).toBe(
      "net.ipv4.conf.gst0.rp_filter",
    );
    expect(currentKey("net.core.somaxconn", phase.formerName)).toBe("net.core.somaxconn");
  });
});

describe("the plan in words", () => {
  it("groups lines by what they touch", () => {
    expect(describePlanLine("link set dev gst0 name eth0")).toEqual({
      group: "interfaces",
      text: "rename gst0 to eth0",
    });
    expect(
      describePlanLine("route replace 0.0.0.0/0 via 10.0.0.1 dev eth0 scope 0 metric 0 table 100"),
    ).toEqual({ group: "routes, table 100", text: "add or replace default via 10.0.0.1 dev eth0" });
    expect(
      describePlanLine(
        "route del 10.0.0.0/24 dev eth0 src 10.0.0.2 scope 253 metric 0 proto kernel table main",
      ).text,
    ).toBe(
      "remove 10.0.0.0/24 dev eth0 src 10.0.0.2 scope link proto kernel  (the kernel's prefix route)",
    );
    expect(describePlanLine("-6 rule del priority 32766 lookup main")).toEqual({
      group: "rules",
      text: "remove rule 32766: (v6) from all lookup main",
    });
    expect(describePlanLine("sysctl net.ipv4.conf.eth0.rp_filter=2")).toEqual({
      group: "sysctls",
      text: "set net.ipv4.conf.eth0.rp_filter = 2",
    });
    expect(renderPlan([])).toContain("nothing to do");
  });
});
