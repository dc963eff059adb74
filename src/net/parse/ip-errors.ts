/**
 * iproute2's words to error kinds: the one table, one test per row (the
 * status a peer sees for a kind is the RPC edge's, src/common/error-status.ts).
 * Messages keep the failing command and what iproute2 said.
 */
import type { NetErrorKind } from "../model/net-error";

/** Ordered: the first matching row wins. */
export const IP_ERROR_TABLE: readonly (readonly [RegExp, NetErrorKind])[] = [
  [/File exists/i, "exists"],
  [/Cannot find device|No such device|does not exist/i, "not-found"],
  [/No such process|No such file or directory/i, "not-found"],
  // IPv6 off on the link: Linux 6.x says so in words, older ones EACCES.
  [/Operation not permitted|Permission denied|IPv6 is disabled/i, "denied"],
  // The request named something the kernel refuses: a gateway it cannot
  // reach (IPv4 "Nexthop has invalid gateway", IPv6 "No route to host"), an
  // address that is not local, a value out of range (an MTU past the device's
  // limits).
  [
    /invalid|not a valid|Network is unreachable|No route to host|out of range|Numerical result|than device (maximum|minimum)/i,
    "invalid",
  ],
  [/Device or resource busy|Resource temporarily unavailable/i, "unavailable"],
];

/** The kind of an iproute2 error text; internal when no row matches. */
export function classifyIpError(stderr: string): NetErrorKind {
  for (const [pattern, kind] of IP_ERROR_TABLE) if (pattern.test(stderr)) return kind;
  return "internal";
}

/**
 * The gist of iproute2's stderr: "Error: X." or "RTNETLINK answers: X"
 * lines without the batch bookkeeping ("Command failed -:N").
 */
export function ipErrorText(stderr: string): string {
  const lines = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !/^Command failed/.test(l))
    .map((l) => l.replace(/^(Error|RTNETLINK answers):\s*/, "").replace(/\.$/, ""));
  return lines.join("; ") || "ip failed without a message";
}

/** The 0-based index of the batch line that failed, from "Command failed -:N". */
export function failedBatchLine(stderr: string): number | undefined {
  const m = /Command failed -:(\d+)/.exec(stderr);
  return m ? Number(m[1]) - 1 : undefined;
}
