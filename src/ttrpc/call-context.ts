/**
 * What a handler gets to know about its call (service.ts CallContext), as
 * a class: an object literal with a `get signal()` accessor costs a getter
 * function and a slow-path property definition per call. The signal
 * (cancellation, call-abort.ts) and the metadata map are made when a
 * handler first reads them; most never do.
 */
import type { CallAbort } from "./call-abort";
import type { RequestEnvelope } from "./envelope";
import type { CallContext } from "./service";

export class RequestContext implements CallContext {
  private meta: Map<string, string[]> | undefined;

  constructor(
    private readonly controller: CallAbort,
    private readonly request: RequestEnvelope,
    readonly deadline: number | undefined,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Request metadata, keys as sent; several values of one key in order. */
  get metadata(): ReadonlyMap<string, readonly string[]> {
    if (this.meta === undefined) {
      const map = new Map<string, string[]>();
      for (const { key, value } of this.request.metadata) {
        const values = map.get(key);
        if (values) values.push(value);
        else map.set(key, [value]);
      }
      this.meta = map;
    }
    return this.meta;
  }

  /** The request's bytes as they came (a view: copy what is kept). */
  get payload(): Uint8Array {
    return this.request.payload;
  }
}
