/**
 * A typed ttRPC client for the agent: `await AgentClient.connect(addr)`, then
 * `client.health.check()`, `client.network.get()`, or any generated method
 * with `client.unary(Health.method.check, {})`. Fails every pending call
 * cleanly when the connection drops. A whole state's Apply (and Get) is written and
 * read by the hand-written codecs of src/wire where they answer, else by
 * protobuf-es (toBinary's bytes and fromBinary's message either way).
 */

import type { Socket } from "node:net";
import {
  create,
  type DescMethod,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import { AgentService } from "../gen/agent_pb";
import { Health } from "../gen/health_pb";
import { Network } from "../gen/network_pb";
import type { AgentAddress } from "../transport/address";
import { dial } from "../transport/dial";
import { type CallOptions, ClientConnection } from "../ttrpc/client-connection";
import { FAST_ANSWER_DECODERS, FAST_REQUEST_ENCODERS } from "../wire/fast-codecs";
import { type ServiceClient, serviceClient } from "./services";

export type { CallOptions };

export class AgentClient {
  private readonly conn: ClientConnection;
  /** grpc.Health: check, version. */
  readonly health: ServiceClient<typeof Health> = serviceClient(Health, this);
  /** grpc.AgentService, the Kata agent's network calls (updateInterface, updateRoutes, ...). */
  readonly agent: ServiceClient<typeof AgentService> = serviceClient(AgentService, this);
  /** netagent.v1.Network: apply, get, read, routeGet. */
  readonly network: ServiceClient<typeof Network> = serviceClient(Network, this);

  constructor(private readonly socket: Socket) {
    this.conn = new ClientConnection((frame) => socket.write(frame));
    socket.on("data", (chunk: Buffer) => this.conn.receive(chunk));
    socket.on("error", (err) => this.conn.close(err));
    socket.on("close", () => this.conn.close());
  }

  /** Dials `address` (unix://, vsock://, hvsock://). */
  static async connect(address: string | AgentAddress, timeoutMs?: number): Promise<AgentClient> {
    return new AgentClient(await dial(address, timeoutMs));
  }

  /** Calls a unary method of a generated service. */
  async unary<M extends DescMethod>(
    method: M,
    request: MessageInitShape<M["input"]>,
    options?: CallOptions,
  ): Promise<MessageShape<M["output"]>> {
    const message = create(method.input, request);
    const payload =
      FAST_REQUEST_ENCODERS.get(method.input.typeName)?.(message) ??
      toBinary(method.input, message);
    const reply = await this.conn.call(method.parent.typeName, method.name, payload, options);
    const answer = FAST_ANSWER_DECODERS.get(method.output.typeName)?.(reply);
    return (answer ?? fromBinary(method.output, reply)) as MessageShape<M["output"]>;
  }

  /** Calls any service/method with raw protobuf bytes. */
  raw(service: string, method: string, payload: Uint8Array, options?: CallOptions) {
    return this.conn.call(service, method, payload, options);
  }

  get closed(): boolean {
    return this.conn.closed;
  }

  close(): void {
    this.conn.close();
    this.socket.destroy();
  }
}
