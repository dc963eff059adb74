/**
 * The exchange log every stand-in keeps beside itself (`BIN.exchanges`, a
 * line "PID INDEX" per exchange, written as it starts): which process
 * served it, and how many that process had served before. Tests use it to
 * tell the agent's resident ip (INDEX > 0 once past its start-up baseline)
 * from one-shot processes, and to wait until the resident answers.
 */
import { existsSync, readFileSync } from "node:fs";
import { waitFor } from "../../helpers/wait";

export interface LoggedExchange {
  pid: number;
  /** Exchanges the process had served before this one (0: its first). */
  index: number;
}

/** Where the stand-in `bin` logs its exchanges. */
export const exchangeLogPath = (bin: string) => `${bin}.exchanges`;

/** The exchanges `bin` served so far, in order. */
export function exchangeLog(bin: string): LoggedExchange[] {
  const path = exchangeLogPath(bin);
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .slice(0, -1)
    .map((l) => {
      const [pid, index] = l.split(" ").map(Number);
      return { pid: pid as number, index: index as number };
    });
}

/**
 * Repeats `read` (a call that runs one read through ip) until the
 * agent's resident ip, past its first exchange, answers it: the agent
 * starts that ip with a baseline listing, and a call meanwhile takes
 * one-shot processes. Afterwards small work goes to the resident.
 */
export async function waitForResident(bin: string, read: () => Promise<unknown>): Promise<void> {
  await waitFor(
    async () => {
      const from = exchangeLog(bin).length;
      await read();
      const answered = exchangeLog(bin)[from];
      return answered !== undefined && answered.index > 0;
    },
    { timeoutMs: 30_000, what: "a read answered by the resident ip" },
  );
}
