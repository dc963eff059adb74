/**
 * The agent's server: one ServerConnection per accepted channel, a cap on
 * connections, and graceful shutdown (stop accepting, let calls in flight
 * finish within a grace period, close).
 */
import type { ByteChannel, ChannelSink, Listener } from "../transport/channel";
import { codeName } from "../ttrpc/codes";
import { ServerConnection } from "../ttrpc/server-connection";
import type { ServiceRegistry } from "../ttrpc/service";
import type { Logger } from "./log";

export interface AgentServerOptions {
  registry: ServiceRegistry;
  log: Logger;
  maxConnections: number;
}

export class AgentServer {
  private readonly connections = new Map<ServerConnection, ByteChannel>();
  private readonly listeners: Listener[] = [];
  private stopping = false;

  constructor(private readonly options: AgentServerOptions) {}

  get connectionCount(): number {
    return this.connections.size;
  }

  /** The acceptor to hand to a transport. */
  readonly accept = (channel: ByteChannel): ChannelSink | undefined => {
    const { log, maxConnections, registry } = this.options;
    if (this.stopping) return undefined;
    if (this.connections.size >= maxConnections) {
      log.warn("connection refused: limit reached", { peer: channel.peer, maxConnections });
      return undefined;
    }
    const conn = new ServerConnection({
      registry,
      write: (frame) => channel.write(frame),
      onCall: (info) => {
        const fields = { ...info, code: codeName(info.code), peer: channel.peer };
        if (info.code === 0) log.debug("call", fields);
        else log.info("call failed", fields);
      },
    });
    this.connections.set(conn, channel);
    log.debug("connection opened", { peer: channel.peer });
    return {
      receive: (chunk) => conn.receive(chunk),
      closed: () => {
        conn.close();
        this.connections.delete(conn);
        log.debug("connection closed", { peer: channel.peer });
      },
    };
  };

  addListener(listener: Listener): void {
    this.listeners.push(listener);
  }

  /**
   * Stops accepting, waits up to `graceMs` for calls in flight, then closes
   * every connection. Resolves true when nothing was cut short.
   */
  async shutdown(graceMs: number): Promise<boolean> {
    this.stopping = true;
    await Promise.all(this.listeners.map((l) => l.close()));
    const drained = Promise.all([...this.connections.keys()].map((c) => c.drain())).then(
      () => true,
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), graceMs);
    });
    const clean = await Promise.race([drained, timeout]);
    clearTimeout(timer);
    for (const channel of this.connections.values()) channel.close();
    return clean;
  }
}
