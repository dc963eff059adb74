/**
 * Every bound the agent puts on what a peer can make it spend, in one
 * place (README "Limits" documents each: default, flag, what happens at
 * the limit). Protocol-level ones live with the protocol and are
 * re-exported here.
 */

// GetIPTables / SetIPTables: rules text in and out, and each iptables tool's deadline.
export { DEFAULT_TIMEOUT_MS as IPTABLES_TIMEOUT_MS, MAX_RULES_BYTES } from "../net/iptables-runner";
export { MAX_CALLS_PER_CONNECTION, MAX_DATA_LENGTH, MAX_REPEATED_ENTRIES } from "../ttrpc/limits";
export { QUOTE_PREFIX } from "../ttrpc/quote";
export { MAX_STATUS_MESSAGE_BYTES } from "../ttrpc/status";

/** Connections served at once (`--max-connections`); more are refused on accept. */
export const DEFAULT_MAX_CONNECTIONS = 64;

/** Network changes waiting for the write queue; more are refused RESOURCE_EXHAUSTED. */
export const MAX_QUEUED_WRITES = 128;

/** `ip` processes running at once; more calls wait for one to end. */
export const MAX_IP_PROCESSES = 8;
