/**
 * readPodBoth (one read of a pod's namespace) gives exactly what the two
 * reads it replaces give: readPodRequests' Kata requests and
 * readPodFullState's whole state, on a real namespace holding both
 * families' addresses, routes in main and in another table, a permanent
 * neighbour, a proxy entry, a rule and a changed sysctl.
 */
import { describe, expect, test } from "vitest";
import { readPodBoth, readPodRequests } from "../../src/host/pod/pod-requests";
import { readPodFullState } from "../../src/host/pod/pod-state";
import { run } from "../helpers/process";
import { linkedPerTest } from "../helpers/veth-per-test";

const linked = linkedPerTest();

/** Maps as sorted entries and bigints as text, so two reads compare as values. */
const plain = (x: unknown) =>
  JSON.parse(
    JSON.stringify(x, (_k, v) =>
      v instanceof Map ? [...v].sort() : typeof v === "bigint" ? `${v}n` : v,
    ),
  );

describe("one read of a pod for both its requests and its whole state", () => {
  test("equals the two reads it replaces", async () => {
    const pod = await linked("nrb", "eth0");
    await pod.ip("addr", "add", "10.77.0.2/24", "dev", "eth0");
    await pod.ip("addr", "add", "fd77::2/64", "dev", "eth0", "nodad");
    await pod.ip("route", "add", "default", "via", "10.77.0.1", "dev", "eth0");
    await pod.ip("route", "add", "10.88.0.0/16", "via", "10.77.0.1", "table", "100");
    await pod.ip("route", "add", "fd88::/64", "via", "fd77::1", "dev", "eth0");
    await pod.ip(
      "neigh",
      "add",
      "10.77.0.9",
      "lladdr",
      "02:00:00:00:77:09",
      "dev",
      "eth0",
      "nud",
      "permanent",
    );
    await pod.ip("neigh", "add", "proxy", "10.77.0.10", "dev", "eth0");
    await pod.ip("rule", "add", "from", "10.77.0.0/24", "table", "100", "priority", "100");
    const set = await run("ip", [
      "netns",
      "exec",
      pod.name,
      "sysctl",
      "-qw",
      "net.ipv4.conf.eth0.rp_filter=2",
    ]);
    expect(set.code, set.stderr).toBe(0);
    const netns = `/run/netns/${pod.name}`;
    const [both, requests, full] = await Promise.all([
      readPodBoth(netns),
      readPodRequests(netns),
      readPodFullState(netns),
    ]);
    expect(requests.routes.length).toBeGreaterThanOrEqual(2);
    expect(requests.neighbors.length).toBeGreaterThanOrEqual(1);
    expect(full.rules.some((r) => r.priority === 100)).toBe(true);
    expect(full.sysctls.some((x) => x.key === "net.ipv4.conf.eth0.rp_filter")).toBe(true);
    expect(plain(both.requests)).toEqual(plain(requests));
    expect(plain(both.full)).toEqual(plain(full));
  });
});
