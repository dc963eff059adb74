/**
 * A generated service as an object of typed methods, connect-es's
 * `createClient(Service, transport)` shape: `network.get({})` rather than
 * `client.unary(Network.method.get, {})`. Each method takes the request
 * (as protobuf-es init shape, every field optional) and the call's
 * options (deadline, signal, metadata), and resolves with the answer or
 * rejects with a TtrpcError carrying the status code and message.
 */
import type { DescMethod, DescService, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { CallOptions } from "../ttrpc/client-connection";

/** Something that calls one unary method: the AgentClient. */
export interface UnaryCaller {
  unary<M extends DescMethod>(
    method: M,
    request: MessageInitShape<M["input"]>,
    options?: CallOptions,
  ): Promise<MessageShape<M["output"]>>;
}

/** The methods of service `S`, by their local (lowerCamelCase) names. */
export type ServiceClient<S extends DescService> = {
  [K in keyof S["method"]]: (
    request?: MessageInitShape<S["method"][K]["input"]>,
    options?: CallOptions,
  ) => Promise<MessageShape<S["method"][K]["output"]>>;
};

/** Binds every method of `service` to `caller`. */
export function serviceClient<S extends DescService>(
  service: S,
  caller: UnaryCaller,
): ServiceClient<S> {
  const methods: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(service.method)) {
    methods[name] = (request: MessageInitShape<DescMethod["input"]> = {}, options?: CallOptions) =>
      caller.unary(method, request, options);
  }
  return methods as ServiceClient<S>;
}
