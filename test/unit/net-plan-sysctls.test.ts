/**
 * planApply's sysctl writes: in the request's order, but a link's
 * stable_secret before its addr_gen_mode (the kernel refuses mode 2,
 * stable privacy, on a link without a secret: EINVAL; writing the secret
 * sets that mode itself), and the namespace-wide writes that set every
 * link's value (forwarding, IPv6's disable_ipv6) before the links' own.
 * Checked in a netns: test/host/sync-kernel-consequences.test.ts,
 * test/host/sync-sysctls-more.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { FullState } from "../../src/net/model/full-state";
import { planApply } from "../../src/net/plan/plan-apply";

const current: FullState = { links: [], routes: [], rules: [], neighbors: [], sysctls: new Map() };
const desired = (sysctls: { key: string; value: string }[]) => ({
  links: [],
  routes: [],
  rules: [],
  neighbors: [],
  sysctls,
  nexthops: [],
});

describe("planApply: the order of sysctl writes", () => {
  it("a stable_secret goes before the addr_gen_mode of its link; the rest keep the request's order", () => {
    const plan = planApply(
      current,
      desired([
        { key: "net.ipv4.ip_forward", value: "1" },
        { key: "net.ipv6.conf.eth0.addr_gen_mode", value: "2" },
        { key: "net.ipv6.conf.eth0.forwarding", value: "1" },
        { key: "net.ipv6.conf.eth0.stable_secret", value: "2001:db8:1:2:3:4:5:6" },
        { key: "net.core.somaxconn", value: "1024" },
      ]),
      { exact: true },
    );
    expect(plan.sysctls.map((s) => s.key)).toEqual([
      "net.ipv6.conf.eth0.stable_secret",
      "net.ipv4.ip_forward",
      "net.ipv6.conf.eth0.addr_gen_mode",
      "net.ipv6.conf.eth0.forwarding",
      "net.core.somaxconn",
    ]);
  });

  it("forwarding for the namespace (ip_forward, all) before any link's or default's, whatever the key order", () => {
    const plan = planApply(
      current,
      desired([
        { key: "net.ipv4.conf.eth0.forwarding", value: "0" },
        { key: "net.ipv6.conf.abc.forwarding", value: "0" },
        { key: "net.ipv6.conf.all.forwarding", value: "1" },
        { key: "net.ipv4.conf.default.forwarding", value: "0" },
        { key: "net.ipv4.ip_forward", value: "1" },
        { key: "net.ipv6.conf.all.disable_ipv6", value: "0" },
      ]),
      { exact: true },
    );
    expect(plan.sysctls.map((s) => s.key)).toEqual([
      "net.ipv6.conf.all.forwarding",
      "net.ipv4.ip_forward",
      "net.ipv6.conf.all.disable_ipv6",
      "net.ipv4.conf.eth0.forwarding",
      "net.ipv6.conf.abc.forwarding",
      "net.ipv4.conf.default.forwarding",
    ]);
  });

  it("a link's forwarding the namespace-wide write will change is written after it, even at its current value", () => {
    const now = { ...current, sysctls: new Map([["net.ipv4.conf.eth0.forwarding", "0"]]) };
    const keys = (list: { key: string; value: string }[]) =>
      planApply(now, desired(list), { exact: true }).sysctls.map((s) => `${s.key}=${s.value}`);
    expect(
      keys([
        { key: "net.ipv4.conf.eth0.forwarding", value: "0" },
        { key: "net.ipv4.ip_forward", value: "1" },
      ]),
    ).toEqual(["net.ipv4.ip_forward=1", "net.ipv4.conf.eth0.forwarding=0"]);
    // Without the namespace-wide write it is left as it is.
    expect(keys([{ key: "net.ipv4.conf.eth0.forwarding", value: "0" }])).toEqual([]);
  });

  it("an IPv4 default (not forwarding) before the links' own, and a link's value it would change written after it", () => {
    const now = { ...current, sysctls: new Map([["net.ipv4.conf.eth0.rp_filter", "0"]]) };
    const plan = planApply(
      now,
      desired([
        { key: "net.ipv4.conf.eth0.rp_filter", value: "0" },
        { key: "net.ipv4.conf.default.rp_filter", value: "1" },
        { key: "net.ipv6.conf.default.accept_ra", value: "2" },
      ]),
      { exact: true },
    );
    expect(plan.sysctls.map((s) => `${s.key}=${s.value}`)).toEqual([
      "net.ipv4.conf.default.rp_filter=1",
      "net.ipv4.conf.eth0.rp_filter=0",
      "net.ipv6.conf.default.accept_ra=2",
    ]);
  });
});
