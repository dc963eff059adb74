/**
 * Calico's dual-stack pod shape, made by hand (no Calico plugin needed):
 * eth0 with 10.65.0.11/32 and fd00:10:65::11/128, its peer cali0 in a
 * private host netns with Calico's MAC ee:ee:ee:ee:ee:ee, the IPv4
 * default via 169.254.1.1 (a link route) and the IPv6 default via the
 * peer's link-local address. Both namespaces are removed by `remove()`.
 */
import { Netns } from "../helpers/netns";
import { waitFor } from "../helpers/wait";

const CALICO_MAC = "ee:ee:ee:ee:ee:ee";
/** cali0's link-local address (from CALICO_MAC): the pod's IPv6 gateway. */
const CALICO_LL = "fe80::ecee:eeff:feee:eeee";

/** The pod netns and its host netns (cali0's side), and eth0's MAC. */
export class CalicoPod {
  private constructor(
    readonly host: Netns,
    readonly pod: Netns,
    readonly mac: string,
  ) {}

  /**
   * The pod, its eth0 with `mac`; back once eth0 has its own link-local
   * address (it comes with carrier, and sync copies it).
   */
  static async create(mac: string): Promise<CalicoPod> {
    const host = await Netns.create("ncalh");
    const pod = await Netns.create("ncalp").catch(async (err: unknown) => {
      await host.remove();
      throw err;
    });
    const made = new CalicoPod(host, pod, mac);
    try {
      await host.ip(
        ...["link", "add", "cali0", "address", CALICO_MAC, "type", "veth"],
        ...["peer", "name", "eth0", "netns", pod.name],
      );
      await pod.ip("link", "set", "eth0", "address", mac);
      await host.ip("link", "set", "cali0", "up");
      await pod.ip("link", "set", "eth0", "up");
      await pod.ip("addr", "add", "10.65.0.11/32", "dev", "eth0");
      await pod.ip("addr", "add", "fd00:10:65::11/128", "dev", "eth0", "nodad");
      await pod.ip("route", "add", "169.254.1.1", "dev", "eth0", "scope", "link");
      await pod.ip("route", "add", "default", "via", "169.254.1.1", "dev", "eth0");
      await pod.ip("-6", "route", "add", "default", "via", CALICO_LL, "dev", "eth0");
      await waitFor(
        async () => {
          const [l] = await pod.json<{ addr_info: { local: string }[] }[]>("addr", "show", "eth0");
          return l?.addr_info.some((a) => a.local.startsWith("fe80:"));
        },
        { what: "the pod's IPv6 link-local address" },
      );
      return made;
    } catch (err) {
      await made.remove();
      throw err;
    }
  }

  async remove(): Promise<void> {
    await this.pod.remove();
    await this.host.remove();
  }
}
