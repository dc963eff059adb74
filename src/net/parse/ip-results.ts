/**
 * What an `ip` run's result means, whoever ran it (a one-shot process or
 * the resident session): its JSON documents, or the NetError it stands
 * for, with the failing command or batch line, iproute2's words and the
 * kind from the one table in ip-errors.ts.
 */

import type { RunResult } from "../iproute/ip-resident";
import { NetError, type NetErrorKind } from "../model/net-error";
import { classifyIpError, failedBatchLine, firstFailure, ipErrorText } from "./ip-errors";
import { splitJsonDocuments } from "./json-documents";

/**
 * A failed batch: which line, what ip said, and its kind. A killed batch
 * has no line; an aborted one keeps the signal's reason as its cause.
 */
export class IpBatchError extends NetError {
  constructor(
    readonly lineIndex: number | undefined,
    readonly line: string | undefined,
    readonly ipMessage: string,
    kind: NetErrorKind,
    options?: { cause?: unknown },
  ) {
    super(kind, line ? `ip ${line}: ${ipMessage}` : `ip: ${ipMessage}`, options);
  }

  /** The batch ip did not finish: killed at its limit, or by the caller's signal. */
  static killed(why: NetError): IpBatchError {
    return new IpBatchError(undefined, undefined, why.message, why.kind, { cause: why.cause });
  }
}

/** A read's documents, or its failure as a NetError naming the command `what`. */
export function readDocuments(what: string, r: RunResult): unknown[] {
  if (r.killed) {
    throw new NetError(r.killed.kind, `ip ${what}: ${r.killed.message}`, {
      cause: r.killed.cause,
    });
  }
  if (r.exitCode !== 0) {
    throw new NetError(classifyIpError(r.stderr), `ip ${what}: ${ipErrorText(r.stderr)}`);
  }
  return documents(`ip ${what}`, r.stdout);
}

/**
 * A batch's documents, those of its show lines (`reads` names them for an
 * error; none: nothing is parsed), or its failure as an IpBatchError: the
 * line is named when it is one of `named` (the plan's lines; a read-back
 * line past them is no line of the plan).
 */
export function batchDocuments(
  r: RunResult,
  named: readonly string[],
  reads: string | undefined,
): unknown[] {
  if (r.killed) throw IpBatchError.killed(r.killed);
  if (r.exitCode === 0) return reads === undefined ? [] : documents(reads, r.stdout);
  const index = failedBatchLine(r.stderr);
  // With -force several lines may fail: the kind is the first failure's,
  // the line the error names (the table's row order must not pick another).
  const first = firstFailure(r.stderr);
  const line = index === undefined ? undefined : named[index];
  throw new IpBatchError(
    line === undefined ? undefined : index,
    line,
    ipErrorText(r.stderr),
    classifyIpError(first),
  );
}

/** One document per JSON listing in `stdout`; internal "unreadable output" when it is cut. */
function documents(what: string, stdout: string): unknown[] {
  try {
    return splitJsonDocuments(stdout);
  } catch (err) {
    throw new NetError("internal", `${what}: unreadable output`, { cause: err });
  }
}
