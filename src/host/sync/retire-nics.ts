/**
 * A NIC that leaves the pod, in the guest: a VM cannot remove a virtual
 * PCI NIC by itself (the VMM unplugs it, if ever), so the watch leaves the
 * NIC but takes everything the pod had given it.
 *
 * With the Kata calls that means UpdateInterface for its MAC with no
 * addresses and no new name or MTU: the agent removes every global
 * address (the kernel then drops the prefix routes they made; the IPv6
 * link-local address stays, as with any request), and the UpdateRoutes of
 * the sync that follows removes any route still using it. The link cannot
 * be set down this way: Kata's UpdateInterface (and ours, for
 * compatibility) always sets the link up, and `raw_flags` carries only
 * NOARP. Without addresses or routes the NIC carries no pod traffic.
 */
import { create } from "@bufbuild/protobuf";
import type { AgentClient } from "../../client/client";
import { AgentService } from "../../gen/agent_pb";
import { InterfaceSchema } from "../../gen/types_pb";
import { isLinkLocal6 } from "../../net/model/address";
import { IFF } from "../../net/vocabulary/links";
import type { SyncRequests } from "../pod/pod-requests";
import type { RetiredNic } from "../watch/watch-output";

/** Pure: the MACs synced before (`previous`) that the pod no longer has, lower-cased. */
export function departedMacs(previous: Iterable<string>, now: SyncRequests): string[] {
  const present = new Set(now.interfaces.map((i) => i.hwAddr.toLowerCase()));
  return [...new Set([...previous].map((m) => m.toLowerCase()))].filter((m) => !present.has(m));
}

/**
 * Strips the guest NICs with these MACs of their addresses. One
 * ListInterfaces first: a NIC the guest no longer has is reported, not
 * waited for (UpdateInterface would wait for a hot-plug until its deadline).
 * Throws the agent's error.
 */
export async function retireNics(
  client: AgentClient,
  macs: readonly string[],
  timeoutMs: number,
): Promise<RetiredNic[]> {
  if (macs.length === 0) return [];
  const listed = await client.unary(AgentService.method.listInterfaces, {}, { timeoutMs });
  const out: RetiredNic[] = [];
  for (const mac of macs) {
    const guest = listed.Interfaces.find((i) => i.hwAddr.toLowerCase() === mac);
    if (!guest) {
      out.push({ hwAddr: mac, name: "", found: false, flushed: [] });
      continue;
    }
    const flushed = guest.IPAddresses.filter((a) => !isLinkLocal6(a.address)).map(
      (a) => `${a.address}/${a.mask}`,
    );
    if (flushed.length > 0) {
      await client.unary(
        AgentService.method.updateInterface,
        {
          interface: create(InterfaceSchema, {
            hwAddr: mac,
            name: "",
            device: "",
            IPAddresses: [],
            mtu: 0n,
            rawFlags: guest.rawFlags & IFF.NOARP,
          }),
        },
        { timeoutMs },
      );
    }
    out.push({ hwAddr: mac, name: guest.name, found: true, flushed });
  }
  return out;
}
