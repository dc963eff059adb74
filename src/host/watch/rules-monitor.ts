/**
 * The pod's packet filter as events, for `sync --watch`: iptables-nft
 * (Debian 12's iptables) keeps its rules in nftables, whose changes are
 * NETLINK_NETFILTER messages that `ip monitor` does not see. iptables'
 * own `xtables-monitor -e` listens for them; each committed change ends
 * with one `NEWGEN:` line, which is counted as one event. Its output is
 * block-buffered on a pipe, so it runs under `stdbuf -oL`.
 *
 * Legacy (x_tables) iptables has no such events: there the rules are
 * still sent with every sync a network change triggers.
 */
import type { MonitorKind, MonitorTool } from "./pod-monitor";

/** Pure: a NEWGEN line closes one nftables transaction. */
function xtablesLineKind(line: string): MonitorKind | null {
  return line.startsWith("NEWGEN:") ? "filter" : null;
}

/** xtables-monitor inside `netns` (a name under /run/netns or a path). */
export function xtablesMonitorTool(netns: string): MonitorTool {
  return {
    name: "xtables-monitor",
    command: { argv: ["stdbuf", "-oL", "xtables-monitor", "-e"], netns },
    lineKind: xtablesLineKind,
    netlinkProtocol: 12,
  };
}
