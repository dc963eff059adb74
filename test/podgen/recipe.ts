/**
 * What the generator hands the builder: a pod's NICs and, in order, the
 * real commands that configure them. Pure data (JSON-printable), so a
 * recipe can be printed, diffed between seeds and replayed by hand.
 */

/** A NIC the builder creates before the steps run. */
export interface PodNic {
  name: string;
  /**
   * veth: peer in the pod's peer netns. tap: `ip tuntap` mode tap with a
   * MAC, held open by a stand-in for the VMM (carrier, as in a Kata pod).
   * bridge: no ports, so no carrier. Each of these has a MAC and a NIC of
   * that MAC in the guest (docs/endpoints.md). tun: no MAC, made by the
   * agent.
   */
  kind: "veth" | "tap" | "bridge" | "tun";
  /** Locally administered unicast MAC (all but a tun). */
  mac?: string;
}

/**
 * One command. `ip`: `ip -n POD ARGS...`; `sysctl`: `ip netns exec POD
 * sysctl -w ARGS...`; `settle`: wait until no IPv6 address on a link with
 * carrier is tentative (DAD done), so later commands may name them as
 * sources, as they could in a running pod.
 */
export interface Step {
  tool: "ip" | "sysctl" | "settle";
  args: string[];
  /** Vocabulary items the command exercises ("route advmss", "rule ipproto", ...). */
  tags: string[];
}

export interface Recipe {
  seed: number;
  nics: PodNic[];
  steps: Step[];
}

/** The command line a step runs, for messages and the replay. */
export function stepText(step: Step, pod = "POD"): string {
  if (step.tool === "ip") return `ip -n ${pod} ${step.args.join(" ")}`;
  if (step.tool === "sysctl") return `ip netns exec ${pod} sysctl -w ${step.args.join(" ")}`;
  return "(wait for DAD)";
}

/** The recipe as the shell commands that build it by hand (NICs first). */
export function recipeScript(recipe: Recipe, pod = "POD", peer = "PEER"): string[] {
  const nics = recipe.nics.flatMap((n, i) => {
    if (n.kind === "tun") return [`ip -n ${pod} tuntap add dev ${n.name} mode tun`];
    if (n.kind === "bridge")
      return [`ip -n ${pod} link add ${n.name} address ${n.mac} type bridge`];
    if (n.kind === "tap")
      return [
        `ip -n ${pod} tuntap add dev ${n.name} mode tap`,
        `ip -n ${pod} link set ${n.name} address ${n.mac}`,
        `(a process attaches to ${n.name} and holds it open, as a VMM does)`,
      ];
    return [
      `ip -n ${pod} link add ${n.name} address ${n.mac} type veth peer name p${i} netns ${peer}`,
    ];
  });
  return [...nics, ...recipe.steps.map((s) => stepText(s, pod))];
}
