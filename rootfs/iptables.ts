/**
 * The packet-filter part of the guest image: Debian's iptables in its
 * nftables flavour (xtables-nft-multi), the xtables extensions the rulesets
 * pods carry need, and the kernel modules behind them. Pure: the executor
 * finds the files and passes them in.
 *
 * Why iptables-nft rather than legacy: it is what Debian 12's `iptables`
 * is, so the guest speaks the same dialect as the host tools that read the
 * pod; its restore commits each table in one netlink transaction; and
 * restoring `*table` + `COMMIT` deletes a table, so SetIPTables can put back
 * a table that did not exist before exactly (legacy would leave it empty).
 * The Debian 6.1 kernel has both as modules (nf_tables + nft_compat +
 * x_tables, or ip_tables + x_tables); nftables needs no per-table module.
 */
import type { Entry } from "./manifest";

/** Where Debian's xtables-nft-multi looks for its extensions (its compiled-in XTABLES_LIBDIR). */
export const xtablesDir = (multiarch: string) => `/usr/lib/${multiarch}/xtables`;
export const XTABLES_DIR = xtablesDir("x86_64-linux-gnu");
export const XTABLES_MULTI = "/usr/sbin/xtables-nft-multi";

/** The commands, all one multi-call binary that dispatches on its name. */
export const IPTABLES_COMMANDS = [
  "iptables",
  "iptables-save",
  "iptables-restore",
  "ip6tables",
  "ip6tables-save",
  "ip6tables-restore",
] as const;

/**
 * Userspace extensions (file names under XTABLES_DIR): what service-mesh
 * inits (Istio REDIRECT and TPROXY modes, Linkerd), the CNI portmap and
 * firewall plugins and kube-style network policies write: tcp/udp/icmp,
 * owner, multiport, comment, conntrack/state, mark/connmark, the NAT
 * targets, addrtype, TPROXY + socket, LOG, statistic, limit, mac, pkttype,
 * iprange, REJECT.
 */
export const IPTABLES_EXTENSIONS = [
  "libxt_standard.so",
  "libxt_tcp.so",
  "libxt_udp.so",
  "libipt_icmp.so",
  "libip6t_icmp6.so",
  "libxt_owner.so",
  "libxt_multiport.so",
  "libxt_comment.so",
  "libxt_conntrack.so",
  "libxt_state.so",
  "libxt_mark.so",
  "libxt_MARK.so",
  "libxt_connmark.so",
  "libxt_CONNMARK.so",
  "libxt_NAT.so",
  "libxt_REDIRECT.so",
  "libxt_DNAT.so",
  "libxt_SNAT.so",
  "libxt_MASQUERADE.so",
  "libxt_addrtype.so",
  "libxt_TPROXY.so",
  "libxt_socket.so",
  "libxt_LOG.so",
  "libxt_statistic.so",
  "libxt_limit.so",
  "libxt_mac.so",
  "libxt_pkttype.so",
  "libxt_iprange.so",
  "libipt_REJECT.so",
  "libip6t_REJECT.so",
] as const;

/**
 * Kernel modules for those (dependencies come from modules.dep). init loads
 * them at boot: the image has no modprobe database for the kernel's
 * on-demand loading of nft expressions and xt matches.
 */
export const IPTABLES_MODULES = [
  // Soft dependencies (modules.softdep), which the modules.dep resolver does
  // not follow: libcrc32c (under nf_tables and nf_conntrack) fails to load
  // without a crc32c implementation; xt_LOG needs a logger.
  "crc32c_generic",
  "nf_log_syslog",
  "nf_tables",
  "nft_compat",
  "nft_chain_nat",
  "nft_ct",
  "nft_nat",
  "nft_redir",
  "nft_masq",
  "nft_limit",
  "nft_reject_inet",
  "xt_tcpudp",
  "xt_owner",
  "xt_multiport",
  "xt_comment",
  "xt_conntrack",
  "xt_state",
  "xt_mark",
  "xt_connmark",
  "xt_nat",
  "xt_REDIRECT",
  "xt_MASQUERADE",
  "xt_addrtype",
  "xt_TPROXY",
  "xt_socket",
  "xt_LOG",
  "xt_statistic",
  "xt_limit",
  "xt_mac",
  "xt_pkttype",
  "xt_iprange",
  "ipt_REJECT",
  "ip6t_REJECT",
] as const;

/** What the executor found on the host. */
export interface IptablesInputs {
  /** Host path of xtables-nft-multi. */
  multi: string;
  /**
   * One per IPTABLES_EXTENSIONS name: the host file, or the name of the
   * extension it links to in the same directory (Debian makes REDIRECT,
   * DNAT, SNAT and MASQUERADE links to libxt_NAT.so, state to conntrack).
   */
  extensions: readonly ({ name: string; source: string } | { name: string; linkTo: string })[];
  /** The extensions' directory in the image (default XTABLES_DIR, x86_64's). */
  dir?: string;
}

/**
 * The entries: the binary, a link per command, the extensions (links kept
 * as links). Throws when an extension of the list is missing or a link
 * points outside the list.
 */
export function iptablesEntries(
  inputs: IptablesInputs,
  origin: (hostPath: string, fallback: string) => string,
): Entry[] {
  const entries: Entry[] = [
    {
      kind: "file",
      path: XTABLES_MULTI,
      mode: 0o755,
      source: inputs.multi,
      origin: origin(inputs.multi, "iptables"),
    },
  ];
  for (const cmd of IPTABLES_COMMANDS) {
    entries.push({
      kind: "symlink",
      path: `/usr/sbin/${cmd}`,
      target: XTABLES_MULTI,
      origin: "iptables-nft",
    });
  }
  const given = new Map(inputs.extensions.map((e) => [e.name, e]));
  for (const name of IPTABLES_EXTENSIONS) {
    const ext = given.get(name);
    if (ext === undefined) throw new Error(`image: xtables extension ${name} not found`);
    const path = `${inputs.dir ?? XTABLES_DIR}/${name}`;
    if ("linkTo" in ext) {
      if (!(IPTABLES_EXTENSIONS as readonly string[]).includes(ext.linkTo)) {
        throw new Error(`image: ${name} links to ${ext.linkTo}, which the image does not carry`);
      }
      entries.push({ kind: "symlink", path, target: ext.linkTo, origin: "iptables" });
    } else {
      entries.push({
        kind: "file",
        path,
        mode: 0o644,
        source: ext.source,
        origin: origin(ext.source, "iptables"),
      });
    }
  }
  return entries;
}
