/**
 * The bounds the agent, front mode and the host put on what a peer can
 * make them spend (docs/limits.md is the table of every bound: default,
 * flag, what happens at the limit). Those of the protocol live with it
 * (src/ttrpc/limits.ts), those of one `ip` or iptables run with the code
 * that runs it. The entries of each kind in one netagent.v1 Apply are the
 * validator's own table (src/agent/validate/validate-state.ts LIMITS):
 * this file is shared by agent, front and host and imports none of them.
 */

/** GetIPTables / SetIPTables: how long a call waits for init's late (netfilter) modules. */
export const MODULES_WAIT_MS = 20_000;

/**
 * Elements a best-effort Apply leaves out by attempts (each refusal costs an
 * attempt and its restore); the next refusal fails the call, restored.
 */
export const APPLY_MAX_REFUSED = 16;

/**
 * How long an Apply that adds IPv6 peer addresses waits for the kernel's
 * /128 routes to the peers before its routes (apply-state.ts settleLinks),
 * reading every {@link PEER_ROUTE_POLL_MS}; past it the batch runs anyway
 * and a route through a peer still missing is refused as before.
 */
export const PEER_ROUTE_WAIT_MS = 1000;
export const PEER_ROUTE_POLL_MS = 5;

/** Connections served at once (`--max-connections`); more are refused on accept. */
export const DEFAULT_MAX_CONNECTIONS = 64;

/**
 * Milliseconds a peer may keep a frame half-sent, or leave its answers
 * unread, before its connection is closed (`--stall-timeout-ms`). Generous
 * for a slow TCG guest; a live shim sends each frame in one write and
 * always reads.
 */
export const DEFAULT_STALL_TIMEOUT_MS = 30_000;

/** How long UpdateInterface waits for a hot-plugged link when the call has no deadline. */
export const HOTPLUG_TIMEOUT_MS = 3000;

/**
 * The cap on the hot-plug wait, whatever the deadline. The Kata runtime
 * gives every network call a 60 s deadline and retries UpdateInterface on
 * "Link not found" (20 times, growing delays), and the Kata agent itself
 * waits 3 s (agent.hotplug_timeout): a longer wait gains nothing, and the
 * wait holds a connection's call slot.
 */
export const HOTPLUG_MAX_WAIT_MS = 60_000;

/** On SIGTERM, how long calls in flight may go on before they are cancelled. */
export const SHUTDOWN_GRACE_MS = 5000;

/**
 * After the grace period, how long cancelled calls may take to finish or
 * roll back a network change: the largest table a call may bring, with
 * room to spare (bench/README.md, design figures).
 */
export const SHUTDOWN_SETTLE_MS = 60_000;

/**
 * The resident ip process starts when the first call is answered, or this
 * long after the agent listens when no call comes first (main.ts).
 */
export const SESSION_WARM_AFTER_MS = 2000;

/** How long shutdown lets answers already written reach their peers before closing. */
export const SHUTDOWN_FLUSH_MS = 2000;

/**
 * Answer bytes written and not yet taken by a peer above which its waiting
 * requests are not started (each could add up to 4 MiB) until it reads.
 */
export const MAX_UNREAD_ANSWER_BYTES = 1 << 20;

/** Network changes waiting for the write queue; more are refused RESOURCE_EXHAUSTED. */
export const MAX_QUEUED_WRITES = 128;

/** `ip` processes running at once; more calls wait for one to end. */
export const MAX_IP_PROCESSES = 8;

/** Bytes of one string value in a log line; longer ones are cut, their length said. */
export const MAX_LOG_VALUE_BYTES = 512;

/** Log lines a second per message text, after a burst of {@link LOG_BURST}. */
export const LOG_LINES_PER_SEC = 10;
export const LOG_BURST = 50;

/**
 * Slowest a peer may take its answers while some wait: within each stall
 * window it must take this many bytes a second, or all of them.
 */
export const MIN_ANSWER_READ_BYTES_PER_SEC = 4096;

/**
 * An idle connection (no call, nothing half-sent, no answer unread) this
 * old is closed to make room when a new one arrives at the connection cap
 * (`--idle-timeout-ms`).
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

/** Front mode: longest wait for the upstream to accept a connection. */
export const UPSTREAM_CONNECT_TIMEOUT_MS = 5000;

/**
 * Front mode: how long past its deadline a forwarded call waits for the
 * upstream's own answer (its DEADLINE_EXCEEDED, worded its way) before the
 * front gives it up and answers DEADLINE_EXCEEDED itself.
 */
export const FORWARD_DEADLINE_GRACE_MS = 1000;

/**
 * Front mode: bytes written for the upstream and not yet taken by it above
 * which the caller's next requests wait (each could add a 4 MiB frame).
 */
export const MAX_UNSENT_FORWARD_BYTES = 1 << 20;

/**
 * Front mode: until the upstream has been reached once, a forwarded call
 * that finds it not listening yet tries again every
 * {@link UPSTREAM_RETRY_MS} for this long (within its deadline) before it
 * fails UNAVAILABLE. The guest starts netagent and the agent behind side
 * by side, and the Kata runtime sends one Check after connecting (30 s
 * deadline) and gives up on the sandbox if that fails: it must wait for
 * the agent, not fail because netagent listened first. Once reached, a
 * lost upstream fails forwarded calls at once.
 */
export const UPSTREAM_START_WAIT_MS = 30_000;
export const UPSTREAM_RETRY_MS = 50;
/** How long before its deadline a call waiting for the upstream to start is answered UNAVAILABLE. */
export const UPSTREAM_START_MARGIN_MS = 250;

/**
 * The largest change record (journal.ts): what puts the old state back
 * should the agent die mid-change. A change whose record would be larger is
 * refused (RESOURCE_EXHAUSTED) before it starts; a larger file found at
 * start is set aside unread. A route takes ~160 bytes, so a 100,000-route
 * table fits twice over.
 */
export const MAX_RECORD_BYTES = 32 << 20;

/**
 * At start, after a crash mid-change: how long the processes the dead agent
 * left (its `ip -batch`, iptables-restore) may go on before they are killed.
 * The old state is restored either way; the wait only lets them end by
 * themselves (their input ends with the dead agent's pipes).
 */
export const ORPHAN_WAIT_MS = 1000;

/** Starts that may try to restore one record; past this it is set aside (a restore that kills the agent cannot loop). */
export const MAX_RESTORE_ATTEMPTS = 3;

/** The state directory (`--state-dir`): tmpfs in the guest, root's alone. */
export const DEFAULT_STATE_DIR = "/run/netagent";
