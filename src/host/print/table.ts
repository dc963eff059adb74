/**
 * Human-readable tables for netagentctl: left-aligned columns, two spaces
 * apart, a header row, trailing blanks trimmed; the interface and route
 * tables of the list and update commands, in the words of words.ts.
 */
import type { Interface, Route } from "../../gen/types_pb";
import { IPFamily } from "../../gen/types_pb";
import { IFF } from "../../net/vocabulary/links";
import { RTNH_F_ONLINK } from "../../net/vocabulary/routes";
import { escapeControls } from "./safe-text";
import { addressWords, destinationWord, kataRouteFamily, scopeWord } from "./words";

export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  // Cells come from the guest: escaped, so none can move the cursor or add a row.
  rows = rows.map((r) => r.map(escapeControls));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join("\n")}\n`;
}

const FLAG_NAMES = ["UP", "NOARP", "LOWER_UP"] as const;

export function interfacesTable(interfaces: readonly Interface[]): string {
  return renderTable(
    ["NAME", "MAC", "MTU", "FLAGS", "ADDRESSES"],
    interfaces.map((i) => [
      i.name,
      i.hwAddr,
      String(i.mtu),
      FLAG_NAMES.filter((f) => (i.rawFlags & IFF[f]) !== 0)
        .join(",")
        .toLowerCase(),
      i.IPAddresses.map((a) => addressWords(a.address, a.mask)).join(" "),
    ]),
  );
}

export function routesTable(routes: readonly Route[]): string {
  return renderTable(
    ["FAMILY", "DESTINATION", "GATEWAY", "DEVICE", "SOURCE", "SCOPE", "FLAGS", "MTU"],
    routes.map((r) => [
      r.family === IPFamily.v6 ? "v6" : "v4",
      destinationWord(r.dest, kataRouteFamily(r)),
      r.gateway,
      r.device,
      r.source,
      scopeWord(r.scope),
      (r.flags & RTNH_F_ONLINK) !== 0 ? "onlink" : r.flags ? String(r.flags) : "",
      r.mtu ? String(r.mtu) : "",
    ]),
  );
}
