/**
 * The last UpdateRoutes that changed nothing, kept for its repeat: a
 * runtime re-sending a pod's routes sends the same bytes, and the table
 * has not moved. The table is still read on every call (the kernel is the
 * truth, not this memo); when the request's bytes and the table ip printed
 * (IpRunner gives the same parsed table back for the same text) are both
 * the kept call's, validation, planning and the answer's encoding would
 * give the kept results again, and are skipped.
 *
 * One entry, for a table of at most KEPT_TABLE_MAX_ROUTES routes (IpRunner
 * keeps no larger one to recognise): a copy of the request (at most the
 * frame limit) and the answer, which is frozen (fast-codecs.ts encodes a
 * frozen answer once).
 */
import type { Routes } from "../../gen/agent_pb";
import { KEPT_TABLE_MAX_ROUTES } from "../../net/iproute/ip-runner";
import type { Route } from "../../net/model/model";

interface Kept {
  payload: Uint8Array;
  desired: readonly Route[];
  table: readonly Route[];
  answer: Routes;
}

export class NoChangeMemo {
  private kept: Kept | undefined;

  /** The validated routes of the kept call, when `payload` is its request byte for byte. */
  desiredFor(payload: Uint8Array | undefined): readonly Route[] | undefined {
    const k = this.kept;
    return k !== undefined && payload !== undefined && sameBytes(k.payload, payload)
      ? k.desired
      : undefined;
  }

  /** The kept answer, when `desired` came from it and `table` is the one it was planned on. */
  answerFor(desired: readonly Route[], table: readonly Route[]): Routes | undefined {
    const k = this.kept;
    return k !== undefined && k.desired === desired && k.table === table ? k.answer : undefined;
  }

  /** Keeps a call that changed nothing (a table within the bound); `answer` is frozen from here on. */
  keep(
    payload: Uint8Array | undefined,
    desired: readonly Route[],
    table: readonly Route[],
    answer: Routes,
  ): Routes {
    if (payload === undefined || table.length > KEPT_TABLE_MAX_ROUTES) {
      this.kept = undefined;
      return answer;
    }
    // The message and its list (the routes in it are this answer's own objects).
    Object.freeze(answer.Routes);
    Object.freeze(answer);
    // A copy: the request's bytes may be a view into a buffer that is reused.
    this.kept = { payload: payload.slice(), desired, table, answer };
    return answer;
  }

  /** After a change: the next call plans afresh. */
  forget(): void {
    this.kept = undefined;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return (
    a.length === b.length &&
    Buffer.from(a.buffer, a.byteOffset, a.length).equals(
      Buffer.from(b.buffer, b.byteOffset, b.length),
    )
  );
}
