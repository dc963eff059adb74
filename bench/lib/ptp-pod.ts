/**
 * The pod behind the pod-sync profiles: a real CNI ptp pod (host-local
 * IPAM: 1 NIC, 3 routes) plus one permanent neighbour on its gateway, read
 * into the requests a runtime would send, as bench row 8 uses them.
 */
import { readPodRequests, type SyncRequests } from "../../src/host/pod/pod-requests";
import { PtpPod } from "../../test/host/helpers";

/** The neighbour's MAC (any unicast one does). */
export const NEIGHBOR_MAC = "02:00:00:00:0b:01";

export interface PtpSync {
  pod: PtpPod;
  req: SyncRequests;
  /** The pod's one interface as UpdateInterface sends it. */
  iface: SyncRequests["interfaces"][number];
}

/** Creates the pod (the caller removes it: `pod.remove()`) and reads its requests. */
export async function ptpSync(): Promise<PtpSync> {
  const pod = await PtpPod.create();
  try {
    const gw = (pod.result as { ips?: { gateway?: string }[] }).ips?.[0]?.gateway;
    if (!gw) throw new Error("ptp result has no gateway");
    await pod.pod.ip("neigh", "add", gw, "lladdr", NEIGHBOR_MAC, "dev", "eth0", "nud", "permanent");
    const req = await readPodRequests(pod.pod.name);
    const iface = req.interfaces[0];
    if (!iface) throw new Error("ptp pod has no interface");
    return { pod, req, iface };
  } catch (err) {
    await pod.remove();
    throw err;
  }
}
