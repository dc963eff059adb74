/**
 * The image's architecture check: every ELF file in it (executables,
 * libraries, the loader, kernel modules) is read for its e_machine, and
 * one of another machine than the guest's fails the build, naming each.
 * Nothing is taken on trust from where a file came from. The result also
 * labels the manifest's lines.
 */
import { closeSync, openSync, readSync } from "node:fs";
import { elfMachine, machineName } from "./elf";
import type { Entry } from "./manifest";

/** The first bytes of a host file: enough for the ELF header's e_machine. */
export function readHead(path: string, bytes = 64): Uint8Array {
  const fd = openSync(path, "r");
  try {
    const head = new Uint8Array(bytes);
    const n = readSync(fd, head, 0, bytes, 0);
    return head.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

export interface MachineCheck {
  /** The machine of each ELF entry (`aarch64`), for the manifest. */
  machines: Map<Entry, string>;
  /** One line: how many ELF files, all of which machine. */
  summary: string;
}

/**
 * Reads each file entry's head with `head` and checks its machine against
 * `expected` (an e_machine value). Throws listing every file of another
 * machine; `what` names the image in the message.
 */
export function checkMachines(
  entries: readonly Entry[],
  expected: number,
  what: string,
  head: (source: string) => Uint8Array = readHead,
): MachineCheck {
  const machines = new Map<Entry, string>();
  const wrong: string[] = [];
  for (const e of entries) {
    if (e.kind !== "file") continue;
    const machine = elfMachine(head(e.source));
    if (machine === undefined) continue;
    machines.set(e, machineName(machine));
    if (machine !== expected) wrong.push(`${e.path} is ${machineName(machine)} (${e.source})`);
  }
  if (wrong.length > 0) {
    throw new Error(
      `${what}: ${wrong.length} ELF file(s) not ${machineName(expected)}:\n  ${wrong.join("\n  ")}`,
    );
  }
  return {
    machines,
    summary: `${machines.size} ELF files, every one ${machineName(expected)} (e_machine ${expected})`,
  };
}
