/**
 * Puts the neighbour entries an AddARPNeighbors touched back as they were:
 * after the call's own batch failed, and at a start after the agent died
 * in the middle of one (recover.ts). The restore runs with -force; whether
 * it is complete is decided by reading the entries afterwards, not by ip's
 * exit status (a delete of an entry the cut-short change never added fails
 * and changes nothing).
 */

import type { Logger } from "../../common/log";
import type { IpRunner } from "../../net/iproute/ip-runner";
import type { Neighbor } from "../../net/model/model";
import { neighboursNotRestored, planNeighborRestore } from "../../net/plan/plan-neighbors";
import { noteRollback } from "./rollbacks";

/** How many entries a log line names at most. */
const NAMED = 10;

/** Restores `touched` as in `before`; never throws: answers what is not back, or undefined. */
export async function restoreNeighbours(
  ip: IpRunner,
  log: Logger,
  before: readonly Neighbor[],
  touched: readonly { ip: string; dev: string }[],
): Promise<string | undefined> {
  let failure: string | undefined;
  try {
    await ip.batch(planNeighborRestore(before, touched), { force: true });
  } catch (err) {
    failure = (err as Error).message;
  }
  let problem: string | undefined;
  try {
    const { neighbors } = await ip.readLinksAndNeighbors();
    const wrong = neighboursNotRestored(before, touched, neighbors);
    if (wrong.length > 0) {
      const named = wrong.slice(0, NAMED).join(", ");
      problem = `${wrong.length} entries not as before (${named}${wrong.length > NAMED ? ", ..." : ""})${failure ? `: ${failure}` : ""}`;
    } else if (failure) {
      log.info("neighbour restore: ip reported failures, the entries read back are as before", {
        error: failure,
      });
    }
  } catch (err) {
    problem = `cannot read the entries back: ${(err as Error).message}${failure ? `; ${failure}` : ""}`;
  }
  noteRollback("neighbours", problem === undefined);
  return problem;
}
