/**
 * netagent.v1.Network's reading methods for `netagentctl diff` and
 * `route-get`: Read, the guest's complete state as iproute2 and
 * /proc/sys/net show it (src/net/iproute/complete-listings.ts, sysctl-tree.ts, and
 * a fresh namespace's files through sysctl-grep.ts), bounded by what one
 * answer can carry; and RouteGet, routing decisions for lookups that are
 * each checked first (src/net/iproute/route-lookup.ts), at most MAX_LOOKUPS.
 * Neither changes anything, so neither waits for the write queue.
 */
import { create } from "@bufbuild/protobuf";
import type { Logger } from "../../common/log";
import { type Network, ReadResponseSchema } from "../../gen/network_pb";
import {
  LISTING_NAMES,
  type ListingName,
  readListings,
  readSomeListings,
} from "../../net/iproute/complete-listings";
import { runLookups } from "../../net/iproute/ip-lookups";
import type { IpRunner } from "../../net/iproute/ip-runner";
import { type LookupSpec, lookupProblem, MAX_LOOKUPS } from "../../net/iproute/route-lookup";
import { readFreshSysctlTree } from "../../net/sysctl/sysctl-grep";
import { SYSCTL_ROOT } from "../../net/sysctl/sysctl-keys";
import { readSysctlTree, SysctlTreeTooLarge } from "../../net/sysctl/sysctl-tree";
import { Code, TtrpcError } from "../../ttrpc/codes";
import { MAX_DATA_LENGTH } from "../../ttrpc/limits";
import type { ServiceImpl } from "../../ttrpc/service";
import { readResponseBytes } from "../../wire/read-writer";
import { invalid } from "../validate/validate-fields";

/** The largest Read answer: a frame, less room for the response envelope around it. */
const READ_MAX_BYTES = MAX_DATA_LENGTH - 1024;

export interface LookupServiceOptions {
  ip: IpRunner;
  log: Logger;
  /** /proc/sys/net, or a stand-in for tests. */
  sysctlRoot?: string;
}

/** The lookups of a RouteGet request, checked; INVALID_ARGUMENT naming the first bad field. */
export function validateLookups(lookups: readonly LookupSpec[]): LookupSpec[] {
  if (lookups.length > MAX_LOOKUPS) {
    throw invalid(
      "lookups",
      `${lookups.length} lookups`,
      `are more than ${MAX_LOOKUPS} in one call`,
    );
  }
  return lookups.map((l, i) => {
    const p = lookupProblem(l);
    if (p) throw invalid(`lookups[${i}].${p.field}`, p.value, p.why);
    return l;
  });
}

/** The names of a Read of some listings, checked; INVALID_ARGUMENT naming the first unknown one. */
function validateListingNames(names: readonly string[]): Set<ListingName> {
  const known = new Set<string>(LISTING_NAMES);
  names.forEach((n, i) => {
    if (!known.has(n))
      throw invalid(`listings[${i}]`, n, `is not a listing (${LISTING_NAMES.join(", ")})`);
  });
  return new Set(names as ListingName[]);
}

export function createLookupService(options: LookupServiceOptions): ServiceImpl<typeof Network> {
  const { ip, log } = options;
  return {
    async read(request, ctx) {
      if (request.listings.length > 0) {
        const names = validateListingNames(request.listings);
        const listings = await readSomeListings(ip, names, { signal: ctx.signal });
        return create(ReadResponseSchema, {
          listings: listings.map((l) => ({ name: l.name, output: l.output, error: l.error ?? "" })),
        });
      }
      const [listings, fresh] = await Promise.all([
        readListings(ip, { signal: ctx.signal, textWhenMetrics: request.textOnlyWithMetrics }),
        readFreshSysctlTree(),
      ]);
      let sysctls: Map<string, string>;
      try {
        sysctls = readSysctlTree(options.sysctlRoot ?? SYSCTL_ROOT);
      } catch (err) {
        if (err instanceof SysctlTreeTooLarge)
          throw new TtrpcError(`Read: ${err.message}`, Code.RESOURCE_EXHAUSTED);
        throw err;
      }
      const answer = create(ReadResponseSchema, {
        listings: listings.map((l) => ({ name: l.name, output: l.output, error: l.error ?? "" })),
        sysctls: [...sysctls].map(([path, value]) => ({ path, value })),
        freshSysctls: [...fresh].map(([path, value]) => ({ path, value })),
      });
      // Measured as it is sent: these very bytes are the answer (read-writer.ts).
      const bytes = readResponseBytes(answer).length;
      if (bytes > READ_MAX_BYTES) {
        const sizes = listings
          .map((l) => [l.name, l.output.length] as const)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 2)
          .map(([n, s]) => `${n} ${s} bytes`)
          .join(", ");
        log.warn("Read: the state is too large for one answer", { bytes });
        throw new TtrpcError(
          `Read: the guest's state is ${bytes} bytes, more than one answer carries (${READ_MAX_BYTES}); largest: ${sizes}`,
          Code.RESOURCE_EXHAUSTED,
        );
      }
      return answer;
    },

    async routeGet(request, ctx) {
      const lookups = validateLookups(request.lookups);
      const decisions = await runLookups(ip, lookups, { signal: ctx.signal });
      return {
        decisions: decisions.map((d) =>
          "error" in d
            ? { route: "", error: d.error }
            : { route: JSON.stringify(d.route), error: "" },
        ),
      };
    },
  };
}
