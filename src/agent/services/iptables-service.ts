/**
 * grpc.AgentService GetIPTables / SetIPTables (the Kata agent's calls: the
 * raw text of iptables-save, and the input of iptables-restore).
 *
 * SetIPTables changes all or nothing: the input is checked first (known
 * tables, no NUL byte, then `iptables-restore --test`, which parses every
 * line and loads every extension without committing), so a malformed input
 * changes nothing. iptables-restore is atomic per table only, so the tables
 * the input names are saved before it runs and, when it fails part-way (the
 * kernel refusing a rule of the second table after the first was
 * committed), put back from that save. Changes run in the agent's one write
 * queue, with the route and link changes.
 */

import { codeOfNetError, toTtrpcError } from "../../common/error-status";
import type { Logger } from "../../common/log";
import type { AgentService } from "../../gen/agent_pb";
import {
  type IpFamily,
  type IptablesRunner,
  MAX_RULES_BYTES,
  RestoreError,
} from "../../net/iptables/iptables-runner";
import {
  checkRestoreInput,
  renderSnapshot,
  splitTables,
  tablesIn,
} from "../../net/iptables/iptables-text";
import { Code, TtrpcError } from "../../ttrpc/codes";
import type { ServiceImpl } from "../../ttrpc/service";
import { noteRollback } from "../apply/rollbacks";
import type { SerialQueue } from "../apply/serial-queue";
import { askPacketFilter } from "../policy/ask";
import type { PolicyGate } from "../policy/gate";
import type { ModulesWait } from "./modules-ready";

export interface IptablesServiceOptions {
  iptables: IptablesRunner;
  log: Logger;
  /** The agent's write queue (shared with the network service). */
  queue: SerialQueue;
  /** Resolves once the netfilter modules are loaded (modules-ready.ts); default: at once. */
  modulesReady?: ModulesWait;
  /** The guest's network policy (none: every valid call goes ahead). */
  gate?: PolicyGate;
}

/** The tools read bytes; latin1 maps each byte to one character, so lines and offsets hold. */
const bytesText = (data: Uint8Array) => Buffer.from(data).toString("latin1");
const familyOf = (isIpv6: boolean): IpFamily => (isIpv6 ? 6 : 4);

/** What the client learns of a refused input: the field, the tool's line number and words. */
function inputError(err: unknown): unknown {
  if (!(err instanceof RestoreError)) return err;
  return new TtrpcError(`data: ${err.message}`, codeOfNetError(err), { cause: err });
}

export function createIptablesService(
  options: IptablesServiceOptions,
): Pick<ServiceImpl<typeof AgentService>, "getIPTables" | "setIPTables"> {
  const { iptables, log, queue } = options;
  const ready = options.modulesReady ?? (() => undefined);

  /** Best effort: returns what went wrong, the caller reports the original failure. */
  async function putBack(family: IpFamily, snapshot: string): Promise<string | undefined> {
    try {
      // No signal: a cancelled call must still leave the tables as they were.
      await iptables.restore(family, Buffer.from(snapshot, "latin1"), { counters: true });
      log.info("iptables restored after a failed change", { family });
      noteRollback("iptables", true);
      return undefined;
    } catch (err) {
      log.error("iptables restore incomplete", { family, error: (err as Error).message });
      noteRollback("iptables", false);
      return (err as Error).message;
    }
  }

  return {
    async getIPTables(request, ctx) {
      const loading = ready(ctx.signal);
      if (loading) await loading;
      const data = await iptables.save(familyOf(request.isIpv6), { signal: ctx.signal });
      return { data };
    },

    async setIPTables(request, ctx) {
      const family = familyOf(request.isIpv6);
      const { data } = request;
      if (data.length > iptables.maxBytes) {
        throw new TtrpcError(
          `data: ${data.length} bytes, over the limit of ${Math.min(iptables.maxBytes, MAX_RULES_BYTES)}`,
          Code.RESOURCE_EXHAUSTED,
        );
      }
      const text = bytesText(data);
      const bad = checkRestoreInput(text);
      if (bad !== undefined) throw new TtrpcError(`data: ${bad}`, Code.INVALID_ARGUMENT);
      const tables = tablesIn(text).map((t) => t.name);
      // Awaited only while the modules load, so calls keep their queue order.
      const loading = ready(ctx.signal);
      if (loading) await loading;

      return queue.run(async () => {
        try {
          await iptables.restore(family, data, { test: true, signal: ctx.signal });
        } catch (err) {
          throw inputError(err);
        }
        options.gate?.admit(askPacketFilter());
        const before = splitTables(
          bytesText(await iptables.save(family, { counters: true, signal: ctx.signal })),
        );
        queue.record(() => ({
          kind: "iptables",
          family,
          tables,
          snapshot: renderSnapshot(before, tables),
        }));
        try {
          const out = await iptables.restore(family, data, { signal: ctx.signal });
          log.info("iptables set", { family, tables, bytes: data.length });
          return { data: out };
        } catch (err) {
          const failed = await putBack(family, renderSnapshot(before, tables));
          const e = toTtrpcError(inputError(err));
          if (failed === undefined) throw e;
          throw new TtrpcError(`${e.message}; putting the tables back failed: ${failed}`, e.code, {
            cause: err,
          });
        }
      }, ctx.signal);
    },
  };
}
