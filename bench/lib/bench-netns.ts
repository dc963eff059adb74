/**
 * The namespace the route rows run in: `eth0` (peer `peer0`), both up,
 * 10.0.0.2/24 on eth0, so 10.0.0.1 is a reachable gateway. Every `ip` call
 * names the namespace; the machine's own is never touched.
 */

import { Netns } from "../../test/helpers/netns";
import { run } from "../../test/helpers/process";
import { ADDRESS, DEV, PEER } from "./route-set";

/** The same set-up by hand, for the commands printed with the table. */
export const SETUP_BY_HAND = [
  "ip netns add NS; ip -n NS link set lo up",
  "ip -n NS link add eth0 type veth peer name peer0; ip -n NS link set peer0 up; ip -n NS link set eth0 up",
  "ip -n NS addr add 10.0.0.2/24 dev eth0",
  "ip netns exec NS dist/netagent --listen unix:///tmp/nb.sock --log-level warn &",
  "routes i < N: 10.(1+i/256).(i%256).0/24 via 10.0.0.1 dev eth0; reset between runs: ip -n NS route flush table main proto boot",
  "afterwards: kill the agent by its PID; ip netns del NS",
];

export async function createBenchNetns(): Promise<Netns> {
  const ns = await Netns.create("nb");
  try {
    await ns.veth(DEV, PEER);
    await ns.ip("addr", "add", ADDRESS, "dev", DEV);
    return ns;
  } catch (err) {
    await ns.remove();
    throw err;
  }
}

/** Removes every route the rows added (proto boot), leaving the kernel's. */
export async function resetRoutes(ns: Netns): Promise<void> {
  const r = await run("ip", ["-n", ns.name, "route", "flush", "table", "main", "proto", "boot"]);
  if (r.code !== 0) throw new Error(`route flush in ${ns.name}: ${r.stderr}`);
}

/** Number of IPv4 main-table routes in the namespace. */
export async function countRoutes(ns: Netns): Promise<number> {
  const r = await run("ip", ["-n", ns.name, "route", "show", "table", "main"]);
  return r.stdout.split("\n").filter(Boolean).length;
}
