/**
 * Front mode: the moment the workload starts, seen in the calls passing to
 * the Kata agent. CreateContainer carries the container's OCI spec, whose
 * annotation `io.kubernetes.cri.container-type` says `sandbox` (the pause
 * container) or `container` (the workload); the first StartContainer the
 * agent answers OK for a `container` starts the policy's phase clock.
 * Only the few fields needed are read from the request bytes (Kata's
 * agent.proto: CreateContainerRequest container_id = 1, OCI = 6;
 * Spec.Annotations = 7, a map of key = 1, value = 2; StartContainerRequest
 * container_id = 1); a request that does not decode is ignored.
 */
import type { AnswerHook } from "../../front/forwarder";
import type { ForwardedCall } from "../../ttrpc/forward";

const CONTAINER_TYPE = "io.kubernetes.cri.container-type";

/** Container ids whose type is remembered at most (a sandbox has a handful). */
const MAX_WATCHED_CONTAINERS = 1024;

type Fields = Map<number, Uint8Array[]>;

/** A varint at `pos`: [value, next position]; throws past the end or past 10 bytes. */
function varint(b: Uint8Array, pos: number): [number, number] {
  let value = 0;
  for (let shift = 0, i = pos; i < b.length && shift < 70; shift += 7, i++) {
    const byte = b[i] as number;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, i + 1];
  }
  throw new Error("truncated varint");
}

/** The length-delimited fields of one message, by number; undefined when it does not decode. */
function fields(bytes: Uint8Array, wanted: readonly number[]): Fields | undefined {
  const out: Fields = new Map();
  try {
    let pos = 0;
    while (pos < bytes.length) {
      const [tag, at] = varint(bytes, pos);
      const no = Math.floor(tag / 8);
      const type = tag % 8;
      if (type === 0) pos = varint(bytes, at)[1];
      else if (type === 1) pos = at + 8;
      else if (type === 5) pos = at + 4;
      else if (type === 2) {
        const [len, start] = varint(bytes, at);
        pos = start + len;
        if (pos > bytes.length) return undefined;
        if (wanted.includes(no)) {
          const list = out.get(no) ?? [];
          list.push(bytes.subarray(start, pos));
          out.set(no, list);
        }
      } else return undefined;
    }
    return pos === bytes.length ? out : undefined;
  } catch {
    return undefined;
  }
}

const text = (b: Uint8Array | undefined) => (b === undefined ? "" : new TextDecoder().decode(b));

/** The container id and type annotation of a CreateContainerRequest. */
export function createdContainer(payload: Uint8Array): { id: string; type: string } | undefined {
  const top = fields(payload, [1, 6]);
  if (top === undefined) return undefined;
  const id = text(top.get(1)?.at(-1));
  const spec = top.get(6)?.at(-1);
  const annotations = spec === undefined ? undefined : fields(spec, [7]);
  let type = "";
  for (const entry of annotations?.get(7) ?? []) {
    const kv = fields(entry, [1, 2]);
    if (text(kv?.get(1)?.at(-1)) === CONTAINER_TYPE) type = text(kv?.get(2)?.at(-1));
  }
  return { id, type };
}

/** The container id of a StartContainerRequest. */
function startedContainer(payload: Uint8Array): string | undefined {
  const top = fields(payload, [1]);
  return top === undefined ? undefined : text(top.get(1)?.at(-1));
}

/** The two hooks of front mode's forwarder that watch for the workload's start. */
export interface ContainerWatch {
  onRequest: (call: ForwardedCall) => void;
  onAnswer: AnswerHook;
}

/**
 * Calls `onWorkload` once, after the agent answered OK the first
 * StartContainer of a container created with type `container`. Requests
 * are read when they pass (their bytes are views); answers pass unchanged.
 */
export function watchContainers(onWorkload: () => void): ContainerWatch {
  const types = new Map<string, string>();
  const starting = new WeakMap<ForwardedCall, string>();
  let started = false;
  return {
    onRequest(call) {
      const { service, method, payload } = call.request;
      if (started || service !== "grpc.AgentService") return;
      if (method === "CreateContainer") {
        const c = createdContainer(payload);
        if (c !== undefined && c.id !== "" && types.size < MAX_WATCHED_CONTAINERS) {
          types.set(c.id, c.type);
        }
      } else if (method === "StartContainer") {
        const id = startedContainer(payload);
        if (id !== undefined && types.get(id) === "container") starting.set(call, id);
      }
    },
    onAnswer(call, answer) {
      if (!started && starting.has(call)) {
        started = true;
        types.clear();
        onWorkload();
      }
      return answer;
    },
  };
}
