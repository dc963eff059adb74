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
 * iproute2's batch bookkeeping on stderr: `Command failed -:N` after the
 * words of each line it could not carry out, N that line's 1-based number
 * in what the process read. This file is the one parser of it.
 */
const FAILED_LINE = /Command failed -:(\d+)\n?/g;

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

/** Whether ip stopped at a line it could not carry out (rather than dying). */
export function stoppedAtLine(stderr: string): boolean {
  return /Command failed -:\d+/.test(stderr);
}

/** stderr up to the first failed line's bookkeeping: that failure's words alone (-force goes on). */
export function firstFailure(stderr: string): string {
  return /^[\s\S]*?Command failed -:\d+/.exec(stderr)?.[0] ?? stderr;
}

/** Every failed line of a `-force` batch: its 0-based index and iproute2's words for it. */
export function failedBatchLines(stderr: string): { index: number; text: string }[] {
  const out: { index: number; text: string }[] = [];
  let last = 0;
  for (const m of stderr.matchAll(FAILED_LINE)) {
    out.push({ index: Number(m[1]) - 1, text: ipErrorText(stderr.slice(last, m.index)) });
    last = (m.index ?? 0) + m[0].length;
  }
  return out;
}

/**
 * stderr with each failed line's number N made `at(N)`: a resident ip
 * counts lines from its start, an exchange from its own first line.
 */
export function renumberFailedLines(stderr: string, at: (n: number) => number): string {
  return stderr.replace(FAILED_LINE, (whole, n: string) => whole.replace(n, String(at(Number(n)))));
}
