/**
 * Run inside a network namespace (`ip netns exec NS bun THIS DEV`), as the
 * agent runs in its own: takes DEV down and up, then waits for it to be
 * ready as the agent does (waitLinksReady with sysfs), and prints what the
 * wait read and how many `ip` processes it started, as JSON.
 */

import { runIpRaw } from "../../../src/net/iproute/ip-raw";
import { IpRunner } from "../../../src/net/iproute/ip-runner";
import { waitLinksReady } from "../../../src/net/iproute/link-ready";
import { startedCounts } from "../../../src/process/started";

const dev = process.argv[2] as string;
const ip = new IpRunner();
const ipStarted = () => startedCounts().get("ip")?.started ?? 0;
await runIpRaw(ip, ["link", "set", dev, "down"]);
await runIpRaw(ip, ["link", "set", dev, "up"]);
const before = ipStarted();
const links = await waitLinksReady(ip, (name) => name === dev, { sysfs: true });
console.log(JSON.stringify({ reads: ipStarted() - before, operstate: links[0]?.operstate }));
