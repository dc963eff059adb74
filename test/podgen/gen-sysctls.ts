/**
 * Namespaced sysctls: per NIC (net.ipv4/ipv6.conf.IF, .neigh.IF; a NIC
 * named with dots is spelled with slashes there, as sysctl(8) writes it),
 * for all/default, and netns-wide net.* keys (Kubernetes' safe set, what
 * CNI tuning configurations set, the multipath hash policy lookups use).
 */
import type { GenState } from "./gen-state";
import type { Prng } from "./prng";

type Value = (rng: Prng, mtu: number) => string;
const bit: Value = (r) => String(r.int(0, 1));
const upTo =
  (n: number): Value =>
  (r) =>
    String(r.int(0, n));

const CONF4: [string, Value][] = [
  ["rp_filter", upTo(2)],
  ["arp_ignore", upTo(2)],
  ["arp_announce", upTo(2)],
  ["proxy_arp", bit],
  ["accept_local", bit],
  ["route_localnet", bit],
  ["log_martians", bit],
  ["send_redirects", bit],
  ["forwarding", bit],
  ["arp_filter", bit],
  ["promote_secondaries", bit],
  ["arp_accept", bit],
];
const CONF6: [string, Value][] = [
  ["accept_ra", upTo(2)],
  ["forwarding", bit],
  ["hop_limit", (r) => String(r.int(1, 255))],
  ["dad_transmits", upTo(3)],
  ["keep_addr_on_down", bit],
  ["mtu", (r, mtu) => String(r.int(1280, mtu))],
  ["router_solicitations", upTo(5)],
  ["accept_redirects", bit],
];
const NEIGH: [string, Value][] = [
  ["base_reachable_time_ms", (r) => String(r.int(5, 120) * 1000)],
  ["gc_stale_time", (r) => String(r.int(30, 600))],
  ["ucast_solicit", (r) => String(r.int(1, 9))],
  ["mcast_solicit", (r) => String(r.int(1, 9))],
  ["delay_first_probe_time", (r) => String(r.int(1, 10))],
];
const NETNS: [string, Value][] = [
  ["net.ipv4.ip_forward", bit],
  ["net.ipv6.conf.all.forwarding", bit],
  ["net.ipv4.conf.all.rp_filter", upTo(2)],
  ["net.ipv4.conf.default.rp_filter", upTo(2)],
  ["net.ipv6.conf.default.accept_ra", upTo(2)],
  ["net.ipv4.ip_local_port_range", (r) => `${r.int(1024, 20000)} ${r.int(30000, 65000)}`],
  ["net.ipv4.ip_unprivileged_port_start", (r) => String(r.int(0, 1024))],
  ["net.ipv4.ping_group_range", (r) => `0 ${r.pick(["0", "1000", "2147483647"])}`],
  ["net.ipv4.tcp_syncookies", upTo(2)],
  ["net.core.somaxconn", (r) => String(r.int(128, 65535))],
  ["net.ipv4.tcp_keepalive_time", (r) => String(r.int(60, 7200))],
  ["net.ipv4.tcp_fin_timeout", (r) => String(r.int(5, 120))],
  ["net.ipv4.fib_multipath_hash_policy", upTo(1)],
  ["net.ipv6.fib_multipath_hash_policy", upTo(1)],
  ["net.ipv4.fib_multipath_use_neigh", bit],
  ["net.ipv4.ip_nonlocal_bind", bit],
  ["net.ipv6.ip_nonlocal_bind", bit],
  ["net.ipv4.tcp_tw_reuse", upTo(2)],
  ["net.ipv4.ip_default_ttl", (r) => String(r.int(32, 255))],
  ["net.unix.max_dgram_qlen", (r) => String(r.int(10, 1000))],
];

export function genSysctls(g: GenState): void {
  const { rng } = g;
  for (const [key, value] of rng.shuffle(NETNS).slice(0, rng.int(0, 5))) {
    g.sysctl(["sysctl netns"], key, value(rng, 1500));
  }
  for (const n of g.nics) {
    // sysctl(8) keys are dotted, so a dot inside the NIC's name is written as a slash.
    const dev = n.name.replaceAll(".", "/");
    const tags = n.name.includes(".") ? ["sysctl nic", "sysctl dotted nic"] : ["sysctl nic"];
    const pick = (list: [string, Value][], prefix: string) => {
      for (const [k, v] of rng
        .shuffle(list)
        .slice(0, rng.weighted([0, 1, 2, 3].map((c) => [c, c === 0 ? 2 : 1] as const)))) {
        g.sysctl(tags, `${prefix}.${dev}.${k}`, v(rng, n.mtu));
      }
    };
    pick(CONF4, "net.ipv4.conf");
    pick(NEIGH, "net.ipv4.neigh");
    if (n.ipv6) {
      pick(CONF6, "net.ipv6.conf");
      pick(NEIGH, "net.ipv6.neigh");
    }
  }
}
