/**
 * Asks a Kata shim for its agent's address: `GET /agent-url` on the shim's
 * HTTP server on `<sandbox dir>/shim-monitor.sock` (a unix socket), which
 * answers the address as plain text (`vsock://CID:1024`,
 * `hvsock:///path:1024`, `remote://...`), as `kata-runtime exec` and
 * kata-monitor ask it. The shim is a peer: the answer is bounded in time
 * ({@link AGENT_URL_TIMEOUT_MS}) and size ({@link AGENT_URL_CAP}), and any
 * deviation is an error that says which.
 */
import { parseAddress } from "../../transport/address";

/** Bytes of an /agent-url answer's body read at most (an address is under 200). */
const AGENT_URL_CAP = 4096;
/** The whole exchange, connect to last byte. */
const AGENT_URL_TIMEOUT_MS = 2000;

/** The shim's answer was not an address we can use: why. */
export class AgentUrlError extends Error {}

async function readCapped(body: ReadableStream<Uint8Array>, cap: number): Promise<string> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > cap) {
      await reader.cancel().catch(() => {});
      throw new AgentUrlError(`answer longer than ${cap} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The agent address the shim on `socket` answers, checked to be one
 * netagentctl can dial (unix://, vsock://, hvsock://). Throws an
 * AgentUrlError naming what was wrong (no answer in time, an HTTP error, an
 * answer too long, not an address, an unknown scheme).
 */
export async function askAgentUrl(
  socket: string,
  timeoutMs = AGENT_URL_TIMEOUT_MS,
  cap = AGENT_URL_CAP,
): Promise<string> {
  const signal = AbortSignal.timeout(timeoutMs);
  let text: string;
  try {
    const res = await fetch("http://shim/agent-url", { unix: socket, signal, keepalive: false });
    if (!res.ok || res.body === null) {
      await res.body?.cancel().catch(() => {});
      throw new AgentUrlError(`HTTP ${res.status}`);
    }
    text = await readCapped(res.body, cap);
  } catch (err) {
    if (err instanceof AgentUrlError) throw new AgentUrlError(`${socket}: ${err.message}`);
    const why = signal.aborted ? `no answer within ${timeoutMs} ms` : fetchFailure(err);
    throw new AgentUrlError(`${socket}: GET /agent-url: ${why}`);
  }
  return checkAgentUrl(text.trim(), `${socket} /agent-url`);
}

/**
 * Why a request to the shim failed, for an operator: Bun's fetch ends some
 * messages with advice for its caller ("For more information, pass
 * `verbose: true` in the second argument to fetch()"), left out here.
 */
function fetchFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/\s*For more information, pass `verbose: true`.*$/s, "");
}

/** Pure: `url` if it is an address netagentctl dials; else an AgentUrlError naming `source`. */
export function checkAgentUrl(url: string, source: string): string {
  const shown = JSON.stringify(url.length > 120 ? `${url.slice(0, 120)}...` : url);
  let kind: string;
  try {
    kind = parseAddress(url).kind;
  } catch (err) {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//.exec(url)?.[1];
    if (scheme && !["unix", "vsock", "hvsock", "serial"].includes(scheme))
      throw new AgentUrlError(`${source}: unknown scheme ${JSON.stringify(scheme)} in ${shown}`);
    throw new AgentUrlError(`${source}: ${(err as Error).message}`);
  }
  if (kind === "serial" || kind === "serial-name") {
    throw new AgentUrlError(`${source}: ${shown} is a guest-side address`);
  }
  return url;
}
