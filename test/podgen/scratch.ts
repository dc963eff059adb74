/**
 * Throwaway netns for the tool's own tests: named uniquely, `lo` up,
 * removed by `removeAll()` (afterEach/afterAll). Every `ip` names its netns.
 */
import { randomBytes } from "node:crypto";
import { run } from "../helpers/process";
import { waitFor } from "../helpers/wait";
import { ipOk } from "./build";

export class Scratch {
  private readonly made: string[] = [];

  async netns(): Promise<string> {
    const name = `pgt-${process.pid % 100000}-${randomBytes(3).toString("hex")}`;
    await ipOk("netns", "add", name);
    this.made.push(name);
    await ipOk("-n", name, "link", "set", "lo", "up");
    return name;
  }

  /** A netns with a veth `name` (with `mac`), its peer up in a second netns. */
  async withVeth(mac: string, name = "eth0"): Promise<{ ns: string; peer: string }> {
    const ns = await this.netns();
    const peer = await this.netns();
    await ipOk(
      "-n",
      ns,
      "link",
      "add",
      name,
      "address",
      mac,
      "type",
      "veth",
      "peer",
      "name",
      "p0",
      "netns",
      peer,
    );
    await ipOk("-n", peer, "link", "set", "p0", "up");
    await ipOk("-n", ns, "link", "set", name, "up");
    // The kernel reports carrier (operstate UP) a moment later (linkwatch); tests compare after that.
    await waitFor(
      async () =>
        (JSON.parse(await ipOk("-n", ns, "-j", "link", "show", name)) as { operstate: string }[])[0]
          ?.operstate === "UP",
      { what: `${name} in ${ns} to be UP` },
    );
    return { ns, peer };
  }

  async removeAll(): Promise<void> {
    for (const ns of this.made.splice(0).reverse()) await run("ip", ["netns", "del", ns]);
  }
}
