/**
 * genpolicy's settings file (Kata's genpolicy-settings.json) to a netagent
 * policy admitting what genpolicy's network rules admit and nothing they
 * refuse, so a guest with netagent in front of the Kata agent is never
 * vetted less than by the agent behind it. Read: `request_defaults` of
 * UpdateInterfaceRequest (allow_raw_flags, forbidden_names,
 * forbidden_hw_addrs), UpdateRoutesRequest (forbidden_device_names,
 * forbidden_source_regex), AddARPNeighborsRequest (forbidden_device_names,
 * forbidden_cidrs_regex, allowed_states, and the flags rules.rego allows:
 * router and proxy); SetIPTables and the list calls, which genpolicy
 * always denies. genpolicy names what is forbidden and netagent what is
 * allowed: a deny list netagent cannot say is refused (CniConfigError-like
 * PolicyInputError naming the field), except the entries netagent refuses
 * in every guest anyway (`lo`, the all-zero MAC, loopback sources and
 * neighbours). Pure.
 */
import { KINDS, type Policy } from "../../agent/policy/schema";

export class GenpolicyError extends Error {
  override readonly name = "GenpolicyError";
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const NOARP = 0x80;
/** The source regexes of Kata's default settings: loopback (::1, 127/8), refused by netagent always. */
const LOOPBACK_SOURCES = ["^(?:0{0,4}:){0,7}0{0,3}1$", "^127\\.(?:[0-9]{1,3}\\.){2}[0-9]{1,3}$"];
const LOOPBACK_CIDRS = ["^127\\.(?:[0-9]{1,3}\\.){2}[0-9]{1,3}$"];
const NUD: Record<number, Policy["neighbours"]["states"][number]> = {
  1: "incomplete",
  2: "reachable",
  4: "stale",
  8: "delay",
  16: "probe",
  32: "failed",
  64: "noarp",
  128: "permanent",
};

function strings(field: string, v: unknown): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) {
    throw new GenpolicyError(`${field}: expected a list of strings`);
  }
  return v;
}

/** Refuses a deny list with entries beyond those netagent refuses always. */
function onlyAlways(field: string, v: unknown, always: readonly string[]): void {
  const extra = strings(field, v).filter((x) => !always.includes(x));
  if (extra.length > 0) {
    throw new GenpolicyError(
      `${field}: ${JSON.stringify(extra)} cannot be said in a netagent policy, which lists what is allowed: write the policy's allow list instead (netagentctl policy --netns or --cni-config)`,
    );
  }
}

/** The netagent policy equivalent to the settings file `text`; throws GenpolicyError. */
export function policyForGenpolicy(text: string): Policy {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new GenpolicyError(`not JSON: ${(err as Error).message}`);
  }
  const defaults =
    isObject(doc) && isObject(doc.request_defaults) ? doc.request_defaults : undefined;
  if (defaults === undefined) throw new GenpolicyError("request_defaults: missing");
  const f = "request_defaults";
  const iface = isObject(defaults.UpdateInterfaceRequest) ? defaults.UpdateInterfaceRequest : {};
  const routes = isObject(defaults.UpdateRoutesRequest) ? defaults.UpdateRoutesRequest : {};
  const neigh = isObject(defaults.AddARPNeighborsRequest) ? defaults.AddARPNeighborsRequest : {};
  const rawFlags = typeof iface.allow_raw_flags === "number" ? iface.allow_raw_flags : 0;
  onlyAlways(`${f}.UpdateInterfaceRequest.forbidden_names`, iface.forbidden_names, ["lo"]);
  onlyAlways(`${f}.UpdateInterfaceRequest.forbidden_hw_addrs`, iface.forbidden_hw_addrs, [
    "00:00:00:00:00:00",
  ]);
  onlyAlways(`${f}.UpdateRoutesRequest.forbidden_device_names`, routes.forbidden_device_names, [
    "lo",
  ]);
  onlyAlways(
    `${f}.UpdateRoutesRequest.forbidden_source_regex`,
    routes.forbidden_source_regex,
    LOOPBACK_SOURCES,
  );
  onlyAlways(`${f}.AddARPNeighborsRequest.forbidden_device_names`, neigh.forbidden_device_names, [
    "lo",
  ]);
  onlyAlways(
    `${f}.AddARPNeighborsRequest.forbidden_cidrs_regex`,
    neigh.forbidden_cidrs_regex,
    LOOPBACK_CIDRS,
  );
  const states = Array.isArray(neigh.allowed_states) ? neigh.allowed_states : [128];
  const nud = states.map((s) => {
    const name = typeof s === "number" ? NUD[s] : undefined;
    if (name === undefined)
      throw new GenpolicyError(
        `${f}.AddARPNeighborsRequest.allowed_states: ${JSON.stringify(s)} is not a single NUD state`,
      );
    return name;
  });
  const any = ["0.0.0.0/0", "::/0"];
  return {
    netagentPolicy: 1,
    interfaces: {
      macs: "any",
      names: "any",
      max: 4096,
      mtu: { min: 68, max: 65535 },
      // Kata's UpdateInterface always sets the link up; Apply's "down" is not a Kata request.
      flags: (rawFlags & NOARP) !== 0 ? ["noarp"] : [],
    },
    addresses: {
      ipv4: { exact: [], within: ["0.0.0.0/0"] },
      ipv6: { exact: [], within: ["::/0"] },
      perInterface: 4096,
    },
    routes: {
      destinations: { exact: [], within: any },
      gateways: any,
      tables: [254],
      types: ["unicast"],
      scopes: ["universe", "site", "link", "host", "nowhere"],
    },
    rules: { allowed: false, tables: [] },
    // rules.rego: flags within router|proxy; netagent's Kata path takes router (proxy is refused as invalid).
    neighbours: { ips: any, lladdrs: "any", states: [...new Set(nud)], flags: ["router"] },
    sysctls: {},
    packetFilter: false,
    reads: false,
    tuntap: { names: [] },
    // genpolicy has no phases: every kind may change at any time.
    phases: { initial: "setup", settleMs: 0, running: [...KINDS] },
  };
}
