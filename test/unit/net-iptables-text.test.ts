/**
 * The pure readers of iptables text: the restore error table (one test per
 * row, with words iptables 1.8.9 really prints), the line and words of a
 * failed restore, tables of an input, input checks, snapshots, the normal
 * form and "has rules".
 */
import { describe, expect, it } from "vitest";
import { codeOfNetError } from "../../src/common/error-status";
import {
  classifyRestoreError,
  IPTABLES_ERROR_TABLE,
  MAX_WORDS,
  restoreFailure,
} from "../../src/net/iptables/iptables-errors";
import {
  checkRestoreInput,
  hasRules,
  normaliseRules,
  renderSnapshot,
  splitTables,
  tablesIn,
} from "../../src/net/iptables/iptables-text";
import { NetError, type NetErrorKind } from "../../src/net/model/net-error";
import { Code } from "../../src/ttrpc/codes";

/** The status a peer is answered with for a tool's `stderr` (the RPC edge's table). */
const peerCode = (stderr: string) =>
  codeOfNetError(new NetError(classifyRestoreError(stderr), "x"));

const ROW_SAMPLES: readonly { kind: NetErrorKind; code: Code; samples: string[] }[] = [
  {
    kind: "denied",
    code: Code.PERMISSION_DENIED,
    samples: [
      "iptables-restore v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied (you must be root)\n",
    ],
  },
  {
    kind: "precondition",
    code: Code.FAILED_PRECONDITION,
    samples: [
      "iptables-restore v1.8.9 (legacy): iptables-restore: unable to initialize table 'nat'\n\nError occurred at line: 1\nTable does not exist (do you need to insmod?)\n",
      "iptables v1.8.9 (nf_tables): Could not fetch rule set generation id: Protocol not supported\n",
      // nf_tables not loaded in a guest (seen when libcrc32c's soft dependency was missing).
      "iptables-save v1.8.9 (nf_tables): Could not fetch rule set generation id: Invalid argument\n",
    ],
  },
  {
    kind: "unavailable",
    code: Code.UNAVAILABLE,
    samples: [
      "Another app is currently holding the xtables lock. Perhaps you want to use the -w option?\n",
    ],
  },
  {
    kind: "exhausted",
    code: Code.RESOURCE_EXHAUSTED,
    samples: [
      "iptables-restore: line 3: RULE_APPEND failed (Cannot allocate memory): rule in chain X\n",
    ],
  },
  {
    kind: "invalid",
    code: Code.INVALID_ARGUMENT,
    samples: [
      "iptables-restore v1.8.9 (nf_tables): Port `99999' not valid\nError occurred at line: 7\n",
      "iptables-restore v1.8.9 (nf_tables): \nline 7: RULE_APPEND failed (Invalid argument): rule in chain PREROUTING\n",
      "iptables-restore: line 1 failed\n",
      "iptables-restore: COMMIT expected at line 3\n",
      "iptables-restore v1.8.9 (nf_tables): Couldn't load match `nosuchmatch':No such file or directory\n",
      'iptables-restore v1.8.9 (nf_tables): unknown option "--bogus"\n',
    ],
  },
];

describe("IPTABLES_ERROR_TABLE", () => {
  it("has one sample group per row, in order", () => {
    expect(ROW_SAMPLES.map((r) => r.kind)).toEqual(IPTABLES_ERROR_TABLE.map(([, k]) => k));
  });
  ROW_SAMPLES.forEach(({ kind, code, samples }, row) => {
    for (const sample of samples) {
      it(`row ${row} (${kind}, ${Code[code]}): ${JSON.stringify(sample.slice(0, 60))}`, () => {
        const first = IPTABLES_ERROR_TABLE.findIndex(([re]) => re.test(sample));
        expect(first).toBe(row);
        expect(classifyRestoreError(sample)).toBe(kind);
        expect(peerCode(sample)).toBe(code);
      });
    }
  });
  it("anything else is internal (INTERNAL at the peer)", () => {
    expect(classifyRestoreError("something odd happened\n")).toBe("internal");
    expect(peerCode("something odd happened\n")).toBe(Code.INTERNAL);
  });
});

describe("restoreFailure", () => {
  it.each([
    [
      "iptables-restore v1.8.9 (nf_tables): Port `99999' not valid\nError occurred at line: 7\nTry `iptables-restore -h' or 'iptables-restore --help' for more information.\n",
      7,
      "Port `99999' not valid",
    ],
    [
      "iptables-restore v1.8.9 (nf_tables): \nline 9: RULE_APPEND failed (Invalid argument): rule in chain PREROUTING\n",
      9,
      "line 9: RULE_APPEND failed (Invalid argument): rule in chain PREROUTING",
    ],
    [
      "iptables-restore v1.8.9 (nf_tables): iptables-restore: line 1 table name 'foo' invalid\nError occurred at line: 1\n",
      1,
      "line 1 table name 'foo' invalid",
    ],
    ["iptables-restore: COMMIT expected at line 3\n", 3, "COMMIT expected at line 3"],
    [
      "ip6tables-restore v1.8.9 (legacy): Couldn't load target `NOPE':No such file or directory\n\nError occurred at line: 2\n",
      2,
      "Couldn't load target `NOPE':No such file or directory",
    ],
  ])("%j", (stderr, line, words) => {
    expect(restoreFailure(stderr, 2)).toEqual({ line, words });
  });
  it("no words: says how it exited", () => {
    expect(restoreFailure("", 4)).toEqual({
      line: undefined,
      words: "exited with 4 without a message",
    });
  });
  it("quotes at most MAX_WORDS characters of the tool's words", () => {
    const f = restoreFailure(`iptables-restore: ${"x".repeat(10_000)}\n`, 1);
    expect(f.words.length).toBe(MAX_WORDS + 3);
  });
});

describe("restore input", () => {
  it("tablesIn: the *table lines with their line numbers", () => {
    expect(tablesIn("# c\n*nat\nCOMMIT\n*filter\n-A X\nCOMMIT\n")).toEqual([
      { name: "nat", line: 2 },
      { name: "filter", line: 4 },
    ]);
  });
  it("checkRestoreInput: unknown table, NUL byte, fine", () => {
    expect(checkRestoreInput("*filter\nCOMMIT\n*broute\nCOMMIT\n")).toBe(
      'line 3: table "broute" is not one of filter, nat, mangle, raw, security',
    );
    expect(checkRestoreInput("*filter\n\n-A INPUT\0x\nCOMMIT\n")).toBe("line 3: NUL byte");
    expect(checkRestoreInput("*raw\nCOMMIT\n*security\nCOMMIT\n")).toBeUndefined();
    expect(checkRestoreInput("")).toBeUndefined();
  });
});

const SAVE = `# Generated by iptables-save v1.8.9 (nf_tables) on Mon Nov 30 13:27:09 2026
*filter
:INPUT DROP [5:300]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
[3:120] -A INPUT -p tcp -j ACCEPT
COMMIT
# Completed on Mon Nov 30 13:27:09 2026
# Generated by iptables-save v1.8.9 (nf_tables) on Mon Nov 30 13:27:09 2026
*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
COMMIT
# Completed on Mon Nov 30 13:27:09 2026
`;

describe("saves", () => {
  it("splitTables: each table's block without comments", () => {
    const t = splitTables(SAVE);
    expect([...t.keys()]).toEqual(["filter", "nat"]);
    expect(t.get("nat")).toBe("*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n");
  });
  it("renderSnapshot: saved blocks, and an empty *T/COMMIT for a table that did not exist", () => {
    expect(renderSnapshot(splitTables(SAVE), ["nat", "mangle", "nat"])).toBe(
      "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n*mangle\nCOMMIT\n",
    );
  });
  it("normaliseRules: no comments, no counters, tables sorted, rule order kept", () => {
    const swapped = SAVE.split("# Generated").reverse().join("# Generated");
    expect(normaliseRules(SAVE)).toEqual([
      "*filter",
      ":INPUT DROP",
      ":FORWARD ACCEPT",
      ":OUTPUT ACCEPT",
      "-A INPUT -p tcp -j ACCEPT",
      "COMMIT",
      "*nat",
      ":PREROUTING ACCEPT",
      ":OUTPUT ACCEPT",
      "COMMIT",
    ]);
    expect(normaliseRules(swapped)).toEqual(normaliseRules(SAVE));
    expect(
      normaliseRules(SAVE.replace("[3:120]", "[7:1]").replace("13:27:09", "14:00:00")),
    ).toEqual(normaliseRules(SAVE));
    const reordered = SAVE.replace(
      "[3:120] -A INPUT -p tcp -j ACCEPT",
      "-A INPUT -j DROP\n-A INPUT -p tcp -j ACCEPT",
    );
    expect(normaliseRules(reordered)).not.toEqual(normaliseRules(SAVE));
  });
  it("hasRules: a rule, a user chain or a non-ACCEPT policy; not empty ACCEPT tables", () => {
    expect(hasRules("")).toBe(false);
    expect(hasRules("*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n")).toBe(false);
    expect(hasRules(SAVE)).toBe(true);
    expect(hasRules("*filter\n:INPUT ACCEPT [0:0]\n:MINE - [0:0]\nCOMMIT\n")).toBe(true);
    expect(hasRules("*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n")).toBe(true);
  });
});
