/**
 * The tun and tap devices of an Apply that cannot be, found before
 * anything changes: a name the guest holds otherwise (plan-tuntap.ts), or
 * a device to make in a guest without /dev/net/tun (a kernel without the
 * tun module). Each comes back as the desired interface's field and why,
 * for apply-state.ts to refuse (FAILED_PRECONDITION) or, with
 * best_effort, leave out with what goes through it.
 */
import type { DesiredState } from "../../net/model/full-state";
import type { LinkPhase } from "../../net/plan/plan-link-phase";
import { TUN_DEVICE } from "../../net/vocabulary/tuntap";

export interface TuntapProblem {
  /** The whole interface: `desired.interfaces[i]`. */
  field: string;
  /** The field and value it is about, and why. */
  reason: string;
}

export function tuntapProblems(
  phase: Pick<LinkPhase, "conflicts" | "created">,
  desired: DesiredState,
  tunDevice: () => boolean,
): TuntapProblem[] {
  const found = phase.conflicts.map((c) => ({ ...c, sub: "name" }));
  if (phase.created.length > 0 && !tunDevice()) {
    const why = `cannot be made: the guest's kernel has no tun device (${TUN_DEVICE} is missing: no tun module?)`;
    for (const name of phase.created) found.push({ name, sub: "tuntap", why });
  }
  return found.map((p) => {
    const field = `desired.interfaces[${desired.links.findIndex((l) => l.tuntap && l.name === p.name)}]`;
    const value = p.sub === "name" ? JSON.stringify(p.name) : `(${p.name})`;
    return { field, reason: `${field}.${p.sub}: ${value} ${p.why}` };
  });
}
