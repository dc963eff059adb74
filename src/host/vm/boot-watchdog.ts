/**
 * The boot watchdog: did the guest itself write anything on the console
 * soon after the firmware handed over? A KVM that cannot run guests (a
 * passed-through /dev/kvm on a CPU without vmx/svm) shows SeaBIOS, its
 * "Booting from ROM.." hand-over to the kernel, and then nothing. The
 * guest boots `quiet`, so its first words are init's (`init: ...`), which
 * a working KVM reaches within about a second.
 */
import type { GuestConsole } from "./guest-console";

// SeaBIOS's hand-over line (its last words before it jumps into the
// kernel's loader ROM), then (after its dots and any blank space) anything:
// kernel messages when not quiet, else init's first line. A console with no
// hand-over line at all (another firmware) counts init's first line.
const HANDED_OVER = /Booting from ROM|(^|\n)init: /;
const GUEST_SPOKE = /Booting from ROM\.*\s*[^\s.]|(^|\n)init: /;

/** How far the boot got, judged from the console transcript alone. */
export function bootStage(transcript: string): "firmware" | "handed-over" | "guest" {
  if (GUEST_SPOKE.test(transcript)) return "guest";
  if (HANDED_OVER.test(transcript)) return "handed-over";
  return "firmware";
}

/** The transcript's last non-empty line, quoted and cut to 80 characters, for messages. */
export function lastLine(transcript: string): string {
  const lines = transcript
    .replaceAll("\r", "\n")
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const last = lines.at(-1);
  return last === undefined ? "nothing" : JSON.stringify(last.slice(0, 80));
}

/**
 * Resolves with "" once the guest has spoken, or with one phrase saying
 * what was seen instead: silence for `silentMs` after the hand-over (or
 * after the start, if the firmware never handed over), or QEMU's exit.
 */
export async function watchBoot(console: GuestConsole, silentMs: number): Promise<string> {
  const s = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  try {
    await console.waitFor(HANDED_OVER, silentMs);
  } catch (err) {
    return failure(console, err, `the firmware did not hand over within ${s(silentMs)}`);
  }
  try {
    await console.waitFor(GUEST_SPOKE, silentMs);
    return "";
  } catch (err) {
    return failure(
      console,
      err,
      `nothing on the console ${s(silentMs)} after the firmware handed over`,
    );
  }
}

function failure(console: GuestConsole, err: unknown, silent: string): string {
  const message = (err as Error).message;
  // The console closes with "qemu exited (...): stderr" when QEMU is gone.
  if (message.startsWith("qemu exited")) return message.split("\n").slice(0, 2).join(" ");
  return `${silent} (last console line: ${lastLine(console.transcript)})`;
}
