/**
 * A node of N Kata-style sandboxes for the follow bench, made cheaply but
 * real: each pod is a netns whose eth0 is a veth with its peer in one
 * shared "node" netns (address, gateway route and a subnet route, as a
 * routed CNI gives), each guest a netns with a NIC carrying the pod NIC's
 * MAC (its peer in one shared wire netns) and dist/netagent on a unix
 * socket, each sandbox a directory under a root with persist.json in the
 * Go runtime's field names (the agent's address in AgentState.URL).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type RunningAgent, startAgent } from "../../test/helpers/agent";
import { Netns } from "../../test/helpers/netns";
import { type TempDir, tempDir } from "../../test/helpers/tmp";
import { waitFor } from "../../test/helpers/wait";
import { goPersist, sandboxDir } from "../../test/host/kata-standins";

export interface BenchSandbox {
  id: string;
  pod: Netns;
  guest: Netns;
  agent: RunningAgent;
  mac: string;
  /** The pod's gateway (on the node side of its veth). */
  gw: string;
}

export class KataNode {
  readonly sandboxes: BenchSandbox[] = [];

  private constructor(
    readonly dir: TempDir,
    readonly root: string,
    readonly node: Netns,
    readonly wire: Netns,
  ) {}

  static async create(): Promise<KataNode> {
    const dir = tempDir("netagent-bench-follow-");
    const root = dir.join("sbs");
    return new KataNode(dir, root, await Netns.create("nh5n"), await Netns.create("nh5w"));
  }

  /**
   * Adds sandbox number `i` (0-based, < 250): pod, guest with its agent, and
   * the directory. `settled`: the agent starts only once the pod's link is
   * out of duplicate detection, as on a Kata node, where the pod's network
   * is made before the VM boots and its agent answers seconds later.
   */
  async add(i: number, settled = false): Promise<BenchSandbox> {
    const id = `sb${String(i).padStart(3, "0")}`;
    const pod = await Netns.create("nh5p");
    const guest = await Netns.create("nh5g");
    const gw = `10.251.${i}.1`;
    await pod.veth("eth0", `h${i}`, { peerNs: this.node });
    await this.node.ip("addr", "add", `${gw}/24`, "dev", `h${i}`);
    await pod.ip("addr", "add", `10.251.${i}.2/24`, "dev", "eth0");
    await pod.ip("route", "add", "default", "via", gw, "dev", "eth0");
    const [link] = await pod.json<{ address: string }[]>("link", "show", "eth0");
    const mac = link?.address as string;
    if (settled) {
      await waitFor(() => pod.linkLocalSettled("eth0"), {
        timeoutMs: 30_000,
        what: `${id}'s pod link out of duplicate detection`,
      });
    }
    await guest.veth("gst0", `w${i}`, { mac, peerNs: this.wire });
    const agent = await startAgent({ netns: guest });
    const sb: BenchSandbox = { id, pod, guest, agent, mac, gw };
    this.sandboxes.push(sb);
    const persist = goPersist({
      netns: `/var/run/netns/${pod.name}`,
      agentUrl: `unix://${agent.socket}`,
      mac,
    });
    writeFileSync(join(sandboxDir(this.root, id), "persist.json"), JSON.stringify(persist), {
      mode: 0o600,
    });
    return sb;
  }

  /** Tears sandbox `sb` down (agent, guest, pod) and forgets it; its directory is the caller's. */
  async drop(sb: BenchSandbox): Promise<void> {
    this.sandboxes.splice(this.sandboxes.indexOf(sb), 1);
    await sb.agent.stop().catch(() => {});
    await sb.guest.remove();
    await sb.pod.remove();
  }

  async remove(): Promise<void> {
    for (const s of [...this.sandboxes]) await this.drop(s);
    await this.node.remove();
    await this.wire.remove();
    this.dir.remove();
  }
}
