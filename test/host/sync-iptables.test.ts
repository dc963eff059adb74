/**
 * sync and diff carry the pod's packet filter: a pod netns with a mesh-style
 * ruleset (istio-init's nat REDIRECT chains, filter chains, the IPv6 half),
 * an agent in a guest netns. Before sync, diff lists the missing rules;
 * sync copies them (checked with an independent iptables-save in the guest
 * netns); diff says EQUAL; the pod changes its mesh (linkerd instead of
 * istio, the IPv6 rules and the filter table dropped) and a second sync
 * mirrors that too, tables the pod no longer has removed from the guest.
 * And `netagentctl iptables get|set` by hand.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normaliseRules } from "../../src/net/iptables/iptables-text";
import { restoreIn, rulesFixture, rulesIn, saveIn } from "../helpers/iptables";
import { Netns } from "../helpers/netns";
import { tempDir } from "../helpers/tmp";
import { ctl, Guest } from "./helpers";

const MAC = "02:00:00:15:00:01";

describe("sync and diff of the pod's packet filter", () => {
  let pod: Netns;
  let guest: Guest;
  let wire: Netns;

  beforeAll(async () => {
    pod = await Netns.create("nh15p");
    // One link in the pod: its veth peer lives in a namespace of its own.
    wire = await Netns.create("nh15w");
    await pod.veth("eth0", "wire0", { mac: MAC, peerNs: wire });
    await pod.ip("addr", "add", "10.15.0.2/24", "dev", "eth0");
    restoreIn(pod.name, rulesFixture("mesh-istio.rules"));
    restoreIn(pod.name, rulesFixture("mesh-istio6.rules"), 6);
    guest = await Guest.create(MAC);
  });
  afterAll(async () => {
    await guest?.remove();
    await pod?.remove();
    await wire?.remove();
  });

  it("diff lists the missing rules, sync copies them, diff says EQUAL", async () => {
    const before = await ctl(["--addr", guest.addr, "diff", "--netns", pod.name]);
    expect(before.code, before.stderr).toBe(1);
    expect(before.stdout).toContain("packet filter (iptables-save, no counters)");
    expect(before.stdout).toContain(
      "<  iptables -A ISTIO_REDIRECT -p tcp -j REDIRECT --to-ports 15001",
    );
    expect(before.stdout).toContain("<  ip6tables -A ISTIO_OUTPUT -d ::1/128 -j RETURN");

    const sync = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
    console.log(sync.stdout);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toContain("packet filter (iptables): 23 rules sent in filter, nat");
    expect(sync.stdout).toContain("packet filter (ip6tables): 10 rules sent in nat");

    // Independently: the guest netns's own iptables-save is the pod's.
    expect(rulesIn(guest.ns.name, 4)).toEqual(rulesIn(pod.name, 4));
    expect(rulesIn(guest.ns.name, 6)).toEqual(rulesIn(pod.name, 6));
    expect(rulesIn(guest.ns.name, 4)).toEqual(normaliseRules(rulesFixture("mesh-istio.rules")));

    const diff = await ctl(["--addr", guest.addr, "diff", "--netns", pod.name]);
    console.log(diff.stdout);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);
    expect(diff.stdout).toContain("=  iptables: 23 rules equal");
    expect(diff.stdout).toMatch(
      /verdict: EQUAL \(1 interface, \d+ routes?[^)]*, 33 packet-filter rules\)/,
    );
  });

  it("a sync whose rules the guest has already sends none (the guest's rules untouched)", async () => {
    // A restore zeroes every counter: count a packet through nat OUTPUT first
    // (a TCP connection to loopback inside the guest's netns; nothing listens).
    spawnSync("ip", ["netns", "exec", guest.ns.name, "bash", "-c", "echo > /dev/tcp/127.0.0.1/9"]);
    // The neighbour entry that traffic made on lo is not the pod's: gone again.
    spawnSync("ip", ["-n", guest.ns.name, "neigh", "del", "0.0.0.0", "dev", "lo"]);
    const counted = () => {
      const r = spawnSync("ip", ["netns", "exec", guest.ns.name, "iptables-save", "-c"], {
        encoding: "utf8",
      });
      return /\[[1-9]\d*:\d+\]/.test(r.stdout);
    };
    expect(counted()).toBe(true);
    const sync = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    expect(sync.stdout).toContain("packet filter (iptables): the guest has them already");
    expect(sync.stdout).toContain("packet filter (ip6tables): the guest has them already");
    expect(counted()).toBe(true);
    expect(rulesIn(guest.ns.name, 4)).toEqual(rulesIn(pod.name, 4));
  });

  it("a changed pod (another mesh, IPv6 and filter gone) is mirrored by a second sync", async () => {
    // What the pod's new init leaves: linkerd's nat only, no filter table, no IPv6 rules.
    restoreIn(pod.name, "*filter\nCOMMIT\n");
    restoreIn(pod.name, "*nat\nCOMMIT\n", 6);
    restoreIn(pod.name, rulesFixture("mesh-linkerd.rules"));
    expect(saveIn(pod.name)).not.toContain("*filter");

    const diff = await ctl(["--addr", guest.addr, "diff", "--netns", pod.name, "--json"]);
    expect(diff.code).toBe(1);
    const json = JSON.parse(diff.stdout) as { equal: boolean; iptables: { differences: number } };
    expect(json.equal).toBe(false);
    expect(json.iptables.differences).toBeGreaterThan(0);

    const sync = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
    expect(sync.code, sync.stderr).toBe(0);
    expect(rulesIn(guest.ns.name, 4)).toEqual(normaliseRules(rulesFixture("mesh-linkerd.rules")));
    expect(saveIn(guest.ns.name, 4)).not.toContain("*filter");
    expect(saveIn(guest.ns.name, 6)).toBe("");
    const again = await ctl(["--addr", guest.addr, "diff", "--netns", pod.name]);
    expect(again.code, again.stdout).toBe(0);
  });
});

describe("netagentctl iptables, by hand", () => {
  let guest: Guest;
  beforeAll(async () => {
    guest = await Guest.create(MAC);
  });
  afterAll(async () => {
    await guest?.remove();
  });

  it("netagentctl iptables set --file / get, by hand; a bad file is refused with the line", async () => {
    const dir = tempDir();
    try {
      const file = dir.join("rules");
      writeFileSync(file, rulesFixture("mesh-istio6.rules"));
      const set = await ctl(["--addr", guest.addr, "iptables", "set", "--ipv6", "--file", file]);
      expect(set.code, set.stderr).toBe(0);
      expect(rulesIn(guest.ns.name, 6)).toEqual(normaliseRules(rulesFixture("mesh-istio6.rules")));
      const get = await ctl(["--addr", guest.addr, "iptables", "get", "--ipv6"]);
      expect(get.code).toBe(0);
      expect(normaliseRules(get.stdout)).toEqual(rulesIn(guest.ns.name, 6));

      const fromStdin = await ctl(
        ["--addr", guest.addr, "iptables", "set", "--file", "-"],
        "*nat\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -p tcp -j REDIRECT --to-ports 99999\nCOMMIT\n",
      );
      expect(fromStdin.code).toBe(1);
      expect(fromStdin.stderr).toContain(
        "INVALID_ARGUMENT: data: iptables-restore: line 3: Port `99999' not valid",
      );
      const missing = await ctl([
        "--addr",
        guest.addr,
        "iptables",
        "set",
        "--file",
        dir.join("nope"),
      ]);
      expect(missing.code).toBe(2);
      const usage = await ctl(["--addr", guest.addr, "iptables", "frobnicate"]);
      expect(usage.code).toBe(2);
    } finally {
      dir.remove();
    }
  });
});

describe("a pod whose rules are in the legacy backend", () => {
  let pod: Netns;
  let wire: Netns;
  let guest: Guest;
  const legacy = (args: string[], input?: string) => {
    const r = spawnSync("ip", ["netns", "exec", pod.name, ...args], { input, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };

  beforeAll(async () => {
    pod = await Netns.create("nh15l");
    wire = await Netns.create("nh15x");
    await pod.veth("eth0", "wire0", { mac: MAC, peerNs: wire });
    await pod.ip("addr", "add", "10.15.0.2/24", "dev", "eth0");
    // An init on a host whose iptables is legacy writes x_tables rules,
    // which iptables-nft-save does not show.
    legacy(["iptables-legacy-restore"], rulesFixture("mesh-istio.rules"));
    guest = await Guest.create(MAC);
  });
  afterAll(async () => {
    await guest?.remove();
    await pod?.remove();
    await wire?.remove();
  });

  it("sync reads them with iptables-legacy-save and mirrors them; diff says EQUAL", async () => {
    expect(saveIn(pod.name)).toBe("");
    const sync = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toContain("packet filter (iptables): 23 rules sent in filter, nat");
    expect(rulesIn(guest.ns.name)).toEqual(normaliseRules(legacy(["iptables-legacy-save"])));
    const diff = await ctl(["--addr", guest.addr, "diff", "--netns", pod.name]);
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);
  });

  it("rules in both backends: sync refuses to guess, saying why", async () => {
    restoreIn(pod.name, "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n");
    const sync = await ctl(["--addr", guest.addr, "sync", "--netns", pod.name]);
    expect(sync.code).toBe(1);
    expect(sync.stderr).toContain(
      "the pod has iptables rules in both the nftables and the legacy backend: not mirrored",
    );
    const diff = await ctl(["--addr", guest.addr, "diff", "--netns", pod.name]);
    expect(diff.code).toBe(3);
  });
});
