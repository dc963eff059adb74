/**
 * A pod read right after a link of it came up: the one read (readPodBoth)
 * says the link is not yet ready, so readPodState waits for it and reads
 * again, and what it returns holds the link-local address the kernel makes
 * once it sees the carrier; checked against the pod's own `ip -j` read
 * afterwards.
 */
import { describe, expect, test } from "vitest";
import { readPodBoth, readPodRequests } from "../../src/host/pod/pod-requests";
import { readPodState } from "../../src/host/sync/sync-once";
import type { Netns } from "../helpers/netns";
import { linkedPerTest } from "../helpers/veth-per-test";

const linked = linkedPerTest();

async function linkLocals(ns: Netns): Promise<string[]> {
  const links = await ns.json<{ addr_info?: { local: string }[] }[]>(
    "-6",
    "addr",
    "show",
    "dev",
    "eth0",
  );
  return links
    .flatMap((l) => l.addr_info ?? [])
    .map((a) => a.local)
    .filter((a) => a.startsWith("fe80:"));
}

describe("a pod read while a link of it comes up", () => {
  test("waits for the link to be ready and holds its link-local", async () => {
    const pod = await linked("nrr", "eth0");
    await pod.ip("link", "set", "eth0", "down");
    await pod.ip("addr", "add", "10.78.0.2/24", "dev", "eth0");
    const netns = `/run/netns/${pod.name}`;
    const source = {
      netns,
      read: () => readPodRequests(netns),
      readBoth: () => readPodBoth(netns),
    };
    await pod.ip("link", "set", "eth0", "up");
    const read = await readPodState(source, { full: true });

    const eth0 = read.full?.links.find((l) => l.name === "eth0");
    const read6 = (eth0?.addresses ?? []).filter((a) => a.address.startsWith("fe80:"));
    expect(read6.map((a) => a.address)).toEqual(await linkLocals(pod));
    expect(read6).toHaveLength(1);
  });
});
