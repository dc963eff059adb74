/**
 * The method table: which service/method names a server answers and with
 * what handler. Lookups fail the way containerd's Go server fails them.
 */
import type {
  DescMessage,
  DescMethod,
  DescService,
  MessageInitShape,
  MessageShape,
} from "@bufbuild/protobuf";
import { Code, TtrpcError } from "./codes";
import { clipText } from "./quote";

/** What a handler knows about its call. */
export interface CallContext {
  /** Aborted when the deadline passes (reason: TimeoutError) or the peer goes away. */
  readonly signal: AbortSignal;
  /** Absolute deadline in `performance.now()` milliseconds, when the caller set one. */
  readonly deadline: number | undefined;
  /** Request metadata; keys as sent (send them lower-case, as Go does). */
  readonly metadata: ReadonlyMap<string, readonly string[]>;
  /** The request's bytes as they came (a view: copy what is kept); absent for in-process calls. */
  readonly payload?: Uint8Array;
}

type UnaryFn<M extends DescMethod> = (
  request: MessageShape<M["input"]>,
  ctx: CallContext,
) => Promise<MessageInitShape<M["output"]>> | MessageInitShape<M["output"]>;

/** An implementation of some or all unary methods of a generated service. */
export type ServiceImpl<S extends DescService> = {
  [K in keyof S["method"]]?: S["method"][K] extends DescMethod ? UnaryFn<S["method"][K]> : never;
};

/**
 * A hand-written reader of a request type: the message, or undefined to
 * leave the bytes to protobuf-es. It reads at most `limit` entries of any
 * repeated field (more is an error), so no count is taken first.
 */
export type FastDecoder = (payload: Uint8Array, limit: number) => unknown;
/** A hand-written writer of an answer type: the bytes, or undefined to leave it to protobuf-es. */
export type FastEncoder = (message: { $typeName: string }) => Uint8Array | undefined;

export interface RegistryOptions {
  /** Readers by request type name (e.g. "grpc.UpdateRoutesRequest"). */
  decoders?: ReadonlyMap<string, FastDecoder>;
  /** Writers by answer type name. */
  encoders?: ReadonlyMap<string, FastEncoder>;
  /**
   * The status a thrown value is answered with: the server's edge table
   * for its own errors. Absent, TtrpcError.from.
   */
  toError?: (err: unknown) => TtrpcError;
}

/** One registered method, with its handler erased to bytes-free messages. */
export interface RegisteredMethod {
  readonly method: DescMethod;
  readonly input: DescMessage;
  readonly output: DescMessage;
  // biome-ignore lint/suspicious/noExplicitAny: the typed impl is checked at register().
  readonly handler: (request: any, ctx: CallContext) => unknown;
  readonly decode: FastDecoder | undefined;
  readonly encode: FastEncoder | undefined;
}

/** Services by their fully qualified name, e.g. "grpc.AgentService". */
export class ServiceRegistry {
  private readonly services = new Map<string, Map<string, RegisteredMethod>>();
  /** The status for a thrown value (see {@link RegistryOptions.toError}). */
  readonly toError: (err: unknown) => TtrpcError;

  constructor(private readonly options: RegistryOptions = {}) {
    this.toError = options.toError ?? TtrpcError.from;
  }

  /**
   * Registers the methods `impl` implements. Methods of the service it leaves
   * out answer UNIMPLEMENTED "method X" like any unknown method.
   */
  register<S extends DescService>(service: S, impl: ServiceImpl<S>): this {
    const methods = this.services.get(service.typeName) ?? new Map<string, RegisteredMethod>();
    for (const method of service.methods) {
      const handler = (impl as Record<string, unknown>)[method.localName];
      if (typeof handler !== "function") continue;
      if (method.methodKind !== "unary") {
        throw new Error(`${service.typeName}/${method.name}: only unary methods are served`);
      }
      methods.set(method.name, {
        method,
        input: method.input,
        output: method.output,
        handler: handler.bind(impl),
        decode: this.options.decoders?.get(method.input.typeName),
        encode: this.options.encoders?.get(method.output.typeName),
      });
    }
    this.services.set(service.typeName, methods);
    return this;
  }

  /** True when `service`/`method` is in the table (a call the server serves itself). */
  has(service: string, method: string): boolean {
    return this.services.get(service)?.has(method) ?? false;
  }

  /**
   * The method, or a TtrpcError with UNIMPLEMENTED worded as Go words it
   * (the name unquoted; a long one cut, since the peer chose its length).
   */
  lookup(service: string, method: string): RegisteredMethod {
    const methods = this.services.get(service);
    if (methods === undefined)
      throw new TtrpcError(`service ${clipText(service, 256)}`, Code.UNIMPLEMENTED);
    const found = methods.get(method);
    if (found === undefined)
      throw new TtrpcError(`method ${clipText(method, 256)}`, Code.UNIMPLEMENTED);
    return found;
  }
}
