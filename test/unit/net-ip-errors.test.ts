/**
 * The one iproute2-stderr -> kind table, one test per row, with the words
 * iproute2 6.1 really prints (recorded in a throwaway netns); each row's
 * kind reaches a peer as the status code named beside it (the RPC edge,
 * src/common/error-status.ts).
 */
import { describe, expect, it } from "vitest";
import { codeOfNetError } from "../../src/common/error-status";
import { NetError, type NetErrorKind } from "../../src/net/model/net-error";
import {
  classifyIpError,
  failedBatchLine,
  failedBatchLines,
  firstFailure,
  IP_ERROR_TABLE,
  ipErrorText,
  renumberFailedLines,
  stoppedAtLine,
} from "../../src/net/parse/ip-errors";
import { Code } from "../../src/ttrpc/codes";

/** The status a peer is answered with for iproute2's `stderr`. */
const peerCode = (stderr: string) => codeOfNetError(new NetError(classifyIpError(stderr), "x"));

/** Per row of IP_ERROR_TABLE, in order: real stderr texts that row must be the first to match. */
const ROW_SAMPLES: readonly { kind: NetErrorKind; code: Code; samples: string[] }[] = [
  {
    kind: "exists",
    code: Code.ALREADY_EXISTS,
    samples: [
      // route add twice; link set name to a taken name
      "RTNETLINK answers: File exists\n",
      "RTNETLINK answers: File exists\nCommand failed -:1\n",
    ],
  },
  {
    kind: "not-found",
    code: Code.NOT_FOUND,
    samples: [
      'Cannot find device "nope"\n', // link set dev nope up; route add ... dev nope
      'Device "nope" does not exist.\n', // addr show dev nope
      "RTNETLINK answers: No such device\n",
    ],
  },
  {
    kind: "not-found",
    code: Code.NOT_FOUND,
    samples: [
      "RTNETLINK answers: No such process\n", // route del of an absent route
      "RTNETLINK answers: No such file or directory\n", // neigh del of an absent entry
    ],
  },
  {
    kind: "denied",
    code: Code.PERMISSION_DENIED,
    samples: [
      "RTNETLINK answers: Operation not permitted\n", // without CAP_NET_ADMIN
      "RTNETLINK answers: Permission denied\n", // IPv6 disabled on the link
      "Error: ipv6: IPv6 is disabled on this device.\n", // the same on Linux 6.18
    ],
  },
  {
    kind: "invalid",
    code: Code.INVALID_ARGUMENT,
    samples: [
      "Error: Nexthop has invalid gateway.\n", // IPv4 gateway not reachable
      "Error: Invalid prefsrc address.\n", // src not local
      "RTNETLINK answers: Network is unreachable\n",
      "RTNETLINK answers: Numerical result out of range\n",
      'Error: argument "x" is wrong: "mtu" value is invalid\n',
      "RTNETLINK answers: No route to host\n", // IPv6 gateway not reachable
      "Error: mtu greater than device maximum.\n", // link set mtu 70000 on a veth
      "Error: mtu less than device minimum.\n",
    ],
  },
  {
    kind: "unavailable",
    code: Code.UNAVAILABLE,
    samples: [
      "RTNETLINK answers: Device or resource busy\n",
      "RTNETLINK answers: Resource temporarily unavailable\n",
    ],
  },
];

describe("IP_ERROR_TABLE", () => {
  it("has one sample group per row, with the row's kind", () => {
    expect(ROW_SAMPLES.map((r) => r.kind)).toEqual(IP_ERROR_TABLE.map(([, kind]) => kind));
  });

  describe.each(ROW_SAMPLES.map((r, i) => [i, r] as const))(
    "row %i",
    (row, { kind, code, samples }) => {
      it.each(samples)(
        "%j is matched first by this row: its kind, and its code at the peer",
        (stderr) => {
          const first = IP_ERROR_TABLE.findIndex(([re]) => re.test(stderr));
          expect(first).toBe(row);
          expect(classifyIpError(stderr)).toBe(kind);
          expect(peerCode(stderr)).toBe(code);
        },
      );
    },
  );

  it.each([
    "Error: ipv4: Address not found.\n", // addr del of an absent address
    "something else entirely",
    "",
  ])("%j matches no row: internal, INTERNAL at the peer", (stderr) => {
    expect(IP_ERROR_TABLE.some(([re]) => re.test(stderr))).toBe(false);
    expect(classifyIpError(stderr)).toBe("internal");
    expect(peerCode(stderr)).toBe(Code.INTERNAL);
  });

  it("orders rows so File exists wins over words of later rows", () => {
    expect(classifyIpError("RTNETLINK answers: File exists (invalid)")).toBe("exists");
    expect(peerCode("RTNETLINK answers: File exists (invalid)")).toBe(Code.ALREADY_EXISTS);
  });
});

describe("ipErrorText", () => {
  it.each([
    ["Error: Nexthop has invalid gateway.\nCommand failed -:3\n", "Nexthop has invalid gateway"],
    ["RTNETLINK answers: File exists\n", "File exists"],
    ['Cannot find device "eth9"\n', 'Cannot find device "eth9"'],
    ['  Device "x" does not exist.  \n\n', 'Device "x" does not exist'],
    ["Error: a.\nError: b.\nCommand failed -:1\n", "a; b"],
    ["", "ip failed without a message"],
    ["Command failed -:2\n", "ip failed without a message"],
  ])("%j -> %j", (stderr, text) => {
    expect(ipErrorText(stderr)).toBe(text);
  });
});

describe("failedBatchLine", () => {
  it.each([
    ["Error: Nexthop has invalid gateway.\nCommand failed -:1\n", 0],
    ["RTNETLINK answers: File exists\nCommand failed -:17\n", 16],
    ["RTNETLINK answers: File exists\n", undefined],
    // A batch from a file names the file, not "-": not ours.
    ["Error: x.\nCommand failed /tmp/b:2\n", undefined],
  ])("%j -> %s", (stderr, index) => {
    expect(failedBatchLine(stderr)).toBe(index);
  });
});

// What `ip -force -batch -` printed in a fresh netns (iproute2 6.1) for
// "route get 10.1.1.1", "route get 127.0.0.1", "route get 10.2.2.2 iif nosuch".
const FORCED =
  'RTNETLINK answers: Network is unreachable\nCommand failed -:1\nCannot find device "nosuch"\nCommand failed -:3\n';

describe("the failed lines of a -force batch", () => {
  it("failedBatchLines: each failed line's index and its own words", () => {
    expect(failedBatchLines(FORCED)).toEqual([
      { index: 0, text: "Network is unreachable" },
      { index: 2, text: 'Cannot find device "nosuch"' },
    ]);
    expect(failedBatchLines("RTNETLINK answers: File exists\n")).toEqual([]);
  });

  it("firstFailure: the first failure's words alone, else the whole stderr", () => {
    expect(firstFailure(FORCED)).toBe(
      "RTNETLINK answers: Network is unreachable\nCommand failed -:1",
    );
    expect(classifyIpError(firstFailure(FORCED))).toBe("invalid");
    expect(firstFailure('Object "x" is unknown\n')).toBe('Object "x" is unknown\n');
  });

  it("stoppedAtLine: only iproute2's batch bookkeeping counts", () => {
    expect(stoppedAtLine(FORCED)).toBe(true);
    expect(stoppedAtLine('Cannot find device "nosuch"\n')).toBe(false);
  });

  it("renumberFailedLines: a resident ip's numbers made the exchange's, words untouched", () => {
    expect(
      renumberFailedLines(FORCED.replace(":1\n", ":41\n").replace(":3\n", ":43\n"), (n) => n - 40),
    ).toBe(FORCED);
  });
});
