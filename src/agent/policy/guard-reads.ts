/**
 * The read-only methods under the policy's `reads`: ListInterfaces,
 * ListRoutes, GetIPTables, netagent.v1 Get, Read and RouteGet answer only
 * when the policy allows reads (genpolicy denies the Kata ones). Their
 * handlers stay as they are; this wraps them where the registry is built.
 */
import { askRead } from "./ask";
import type { PolicyGate } from "./gate";

type Handler = (request: never, ctx: never) => unknown;

/** `impl` with each of `methods` admitted by `gate` first (no gate: `impl` itself). */
export function guardReads<T extends object>(
  impl: T,
  gate: PolicyGate | undefined,
  service: string,
  methods: readonly (keyof T & string)[],
): T {
  if (gate === undefined) return impl;
  const out = { ...impl };
  for (const m of methods) {
    const handler = impl[m] as unknown as Handler;
    const name = `${service}/${m[0]?.toUpperCase()}${m.slice(1)}`;
    (out as Record<string, unknown>)[m] = (request: never, ctx: never) => {
      gate.admit(askRead(name));
      return handler(request, ctx);
    };
  }
  return out;
}
