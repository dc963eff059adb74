/**
 * Protocol-level bounds of the server side. The table of every bound
 * (with these) is docs/limits.md; the agent's own are src/common/limits.ts.
 */
export { MAX_DATA_LENGTH } from "./frame";

/**
 * Calls one connection may have running at once (answered or not: a call
 * whose deadline passed counts until its work has ended). At the cap the
 * connection's requests are left unread until a call ends.
 */
export const MAX_CALLS_PER_CONNECTION = 32;

/**
 * Entries of one repeated field in one request, counted on the wire before
 * decoding (100,000 routes is the largest table the tests apply).
 */
export const MAX_REPEATED_ENTRIES = 100_000;

/**
 * Forwarded calls (front mode) one connection may have waiting for the
 * upstream at once. Larger than the local cap: a Kata shim keeps long
 * polls open on its one connection (WaitProcess, ReadStdout, ReadStderr
 * per container process, GetOOMEvent), which hold a call each until
 * something happens; at 32 a pod of ten containers would leave none for
 * CreateContainer. Each costs the front a table entry, not its bytes.
 */
export const MAX_FORWARDED_CALLS_PER_CONNECTION = 1024;
