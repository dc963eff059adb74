/**
 * planApply's sysctl writes: in the request's order, but a link's
 * stable_secret before its addr_gen_mode (the kernel refuses mode 2,
 * stable privacy, on a link without a secret: EINVAL; writing the secret
 * sets that mode itself). Checked in a netns:
 * test/host/sync-kernel-consequences.test.ts.
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
});
