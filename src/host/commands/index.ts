/** The subcommands that live in src/host/commands, by name. */
import type { Command } from "./common";
import { diff } from "./diff";
import { follow } from "./follow";
import { call, check, version } from "./health";
import { iptables } from "./iptables";
import { listInterfaces, listRoutes } from "./list";
import { plan } from "./plan";
import { policy } from "./policy";
import { routeGet } from "./route-get";
import { sync } from "./sync";
import { addNeighbors, updateInterface, updateRoutes } from "./update";

const COMMANDS: readonly Command[] = [
  check,
  version,
  call,
  sync,
  diff,
  plan,
  policy,
  routeGet,
  listInterfaces,
  listRoutes,
  updateRoutes,
  updateInterface,
  addNeighbors,
  iptables,
  follow,
];

export function findCommand(name: string): Command | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** Lines for the global usage text. */
export function commandSummaries(): string {
  const width = Math.max(36, ...COMMANDS.map((c) => c.name.length + 2));
  return COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`).join("\n");
}
