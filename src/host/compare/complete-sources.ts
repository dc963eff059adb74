/**
 * Where the two complete reads come from: the pod's, read on this host in
 * its namespace (the same listings the agent runs, src/net/
 * complete-listings.ts; its /proc/sys/net read by a process inside it;
 * this kernel's fresh namespace), and the guest's, from the agent's
 * netagent.v1.Network Read. A read whose routes moved between its JSON
 * and text listings is taken again, a few times. For waiting on the
 * kernel, both sides' address listings alone (a cheap read).
 */

import type { AgentClient } from "../../client/client";
import { Network } from "../../gen/network_pb";
import { readListings, readSomeListings } from "../../net/iproute/complete-listings";
import { IpRunner } from "../../net/iproute/ip-runner";
import { readFreshSysctlTree, readNetnsSysctlTree } from "../../net/sysctl/sysctl-grep";
import { Code, TtrpcError } from "../../ttrpc/codes";
import { type CompleteRead, RoutesMovedError, toCompleteRead } from "./complete-read";

const ATTEMPTS = 3;

async function again<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      if (!(err instanceof RoutesMovedError) || attempt === ATTEMPTS) throw err;
    }
  }
}

/** The pod's complete read (`netns` a name under /run/netns or a path). */
export function readPodComplete(netns: string, ipBinary?: string): Promise<CompleteRead> {
  return again(async () => {
    const [listings, sysctls, fresh] = await Promise.all([
      readListings(
        new IpRunner({ ...(ipBinary === undefined ? {} : { binary: ipBinary }), netns }),
        { textWhenMetrics: true },
      ),
      readNetnsSysctlTree(netns),
      readFreshSysctlTree(),
    ]);
    return toCompleteRead("the pod", listings, sysctls, fresh);
  });
}

/** The guest's complete read, or undefined when the agent has no Read (UNIMPLEMENTED). */
export async function readGuestComplete(
  client: AgentClient,
  timeoutMs: number,
): Promise<CompleteRead | undefined> {
  try {
    return await again(async () => {
      // A route-text listing only where there are metrics, as the pod's own read (above).
      const r = await client.unary(
        Network.method.read,
        { textOnlyWithMetrics: true },
        { timeoutMs },
      );
      return toCompleteRead(
        "the guest",
        r.listings,
        r.sysctls.map((s) => [s.path, s.value] as const),
        r.freshSysctls.map((s) => [s.path, s.value] as const),
      );
    });
  } catch (err) {
    if (err instanceof TtrpcError && err.code === Code.UNIMPLEMENTED) return undefined;
    throw err;
  }
}

const ADDRESS_ONLY = new Set(["address"] as const);

/**
 * Both sides' `ip -d -j address` listings, parsed: the pod's read on this
 * host, the guest's by a Read of that listing alone (an agent that reads
 * everything anyway answers it too); undefined when the agent has no Read.
 */
export async function readAddressesBoth(
  client: AgentClient,
  netns: string,
  timeoutMs: number,
): Promise<{ pod: unknown[]; guest: unknown[] } | undefined> {
  const parse = (output: string | undefined, side: string): unknown[] => {
    const value: unknown = JSON.parse(output || "[]");
    if (!Array.isArray(value)) throw new Error(`${side}'s address listing is not a JSON array`);
    return value;
  };
  try {
    const [pod, guest] = await Promise.all([
      readSomeListings(new IpRunner({ netns }), ADDRESS_ONLY),
      client.unary(Network.method.read, { listings: ["address"] }, { timeoutMs }),
    ]);
    return {
      pod: parse(pod[0]?.output, "the pod"),
      guest: parse(guest.listings.find((l) => l.name === "address")?.output, "the guest"),
    };
  } catch (err) {
    if (err instanceof TtrpcError && err.code === Code.UNIMPLEMENTED) return undefined;
    throw err;
  }
}
