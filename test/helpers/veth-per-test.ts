/**
 * For a test file, called at its top: `linked(prefix, dev)` makes a
 * namespace whose `dev` is a veth, up, with its peer `p0` up in a namespace
 * of its own (so `dev` has carrier), both removed after each test.
 */
import { afterEach } from "vitest";
import { Netns } from "./netns";

export function linkedPerTest(): (prefix: string, dev: string) => Promise<Netns> {
  const spaces: Netns[] = [];
  afterEach(async () => {
    for (const ns of spaces.splice(0)) await ns.remove();
  });
  return async (prefix, dev) => {
    const ns = await Netns.create(prefix);
    spaces.push(ns);
    const peer = await Netns.create(`${prefix}p`);
    spaces.push(peer);
    await ns.veth(dev, "p0", { peerNs: peer });
    return ns;
  };
}
