/**
 * netagent: the guest network agent. Parses flags and the kernel command
 * line, listens, serves until SIGTERM/SIGINT, then shuts down gracefully.
 * Exit codes: 0 clean, 1 runtime failure, 2 bad configuration.
 */
import { readFileSync } from "node:fs";
import {
  HOTPLUG_TIMEOUT_MS,
  MAX_IP_PROCESSES,
  MAX_QUEUED_WRITES,
  SESSION_WARM_AFTER_MS,
  SHUTDOWN_SETTLE_MS,
} from "../common/limits";
import { createLogger, type Logger } from "../common/log";
import { appendMetrics } from "../front/metrics-append";
import { AgentService } from "../gen/agent_pb";
import { Health } from "../gen/health_pb";
import { Network } from "../gen/network_pb";
import { IpRunner } from "../net/iproute/ip-runner";
import { IpSession } from "../net/iproute/ip-session";
import { Semaphore } from "../net/iproute/semaphore";
import { IptablesRunner } from "../net/iptables/iptables-runner";
import { SysctlFs } from "../net/sysctl/sysctl-fs";
import type { AgentAddress } from "../transport/address";
import type { Acceptor, Listener } from "../transport/channel";
import { findVirtioPort, listenSerial } from "../transport/serial";
import { listenFd, listenUnix } from "../transport/socket-listener";
import { vsockListenFd, vsockPeerCid } from "../transport/vsock";
import { errorText } from "../ttrpc/run-call";
import { ServiceRegistry } from "../ttrpc/service";
import { type ChangeJournal, SerialQueue } from "./apply/serial-queue";
import { type AgentConfig, ConfigError, parseArgs, USAGE } from "./config/config";
import { Journal, StateDirError } from "./journal/journal";
import { bootId, netnsId, readProcStat } from "./journal/proc-stat";
import { leadProcessGroup } from "./journal/process-group";
import { recoverAtStart } from "./journal/recover";
import type { PolicyGate } from "./policy/gate";
import { guardReads } from "./policy/guard-reads";
import { loadPolicy } from "./policy/load";
import { PolicyError } from "./policy/schema";
import { frontHooks, startPolicy } from "./policy/start";
import { AGENT_REGISTRY_OPTIONS } from "./server/registry-options";
import { AgentServer } from "./server/server";
import { guardVsockPeers } from "./server/vsock-peers";
import { healthService } from "./services/health-service";
import { createIptablesService } from "./services/iptables-service";
import { createNetworkService } from "./services/kata-network-service";
import { createLookupService } from "./services/lookup-service";
import { AgentMetrics } from "./services/metrics";
import { modulesReady } from "./services/modules-ready";
import { createStateService } from "./services/state-service";
import { AGENT_VERSION } from "./version";

function readCmdline(): string {
  try {
    // One character per byte: the kernel splits bytes (kernel-cmdline.ts).
    return readFileSync("/proc/cmdline", "latin1");
  } catch {
    return "";
  }
}

async function listen(address: AgentAddress, text: string, accept: Acceptor): Promise<Listener> {
  switch (address.kind) {
    case "unix":
      return listenUnix(address.path, accept);
    case "vsock":
      return listenFd(vsockListenFd(address.port, address.cid), accept, text, vsockPeerCid);
    case "serial":
      return listenSerial(address.path, accept);
    case "serial-name":
      return listenSerial(findVirtioPort(address.name), accept);
    case "hvsock":
      throw new ConfigError("hvsock:// is a host-side address");
  }
}

export interface RegistryChoices {
  log: Logger;
  metrics: AgentMetrics;
  /** Where changes are recorded before they are made (none: not recorded; in-process tests). */
  journal?: ChangeJournal;
  ipBin?: string;
  /** The resident ip process the calls share (none: every run a one-shot ip). */
  session?: IpSession;
  /** The resident `ip -6` the calls share for IPv6 rules and listings (none: one-shot). */
  session6?: IpSession;
  /** Front mode: grpc.Health and GetMetrics are the upstream's (forwarded). */
  front?: boolean;
  /** The guest's network policy (none: every valid call goes ahead). */
  gate?: PolicyGate;
}

/**
 * Builds the method table of everything the agent serves. In front mode
 * grpc.Health is left out (the upstream answers it: a shim that waits for
 * SERVING must wait for the agent behind), and so is GetMetrics (the
 * upstream's answer gets netagent's metrics appended on its way back).
 */
export function buildRegistry(choices: RegistryChoices): ServiceRegistry {
  const { log, metrics, ipBin = "ip", session, session6, front = false, journal, gate } = choices;
  // One write queue: link, route, neighbour, packet-filter and whole-state changes never overlap.
  const queue = new SerialQueue(MAX_QUEUED_WRITES, journal);
  const ip = new IpRunner({
    binary: ipBin,
    slots: new Semaphore(MAX_IP_PROCESSES),
    session,
    session6,
  });
  const registry = new ServiceRegistry(AGENT_REGISTRY_OPTIONS);
  if (!front) registry.register(Health, healthService);
  const kata = {
    ...createNetworkService({ ip, log, hotplugTimeoutMs: HOTPLUG_TIMEOUT_MS, queue, gate }),
    ...createIptablesService({
      iptables: new IptablesRunner(),
      log,
      queue,
      modulesReady: modulesReady(),
      ...(gate ? { gate } : {}),
    }),
    ...(front ? {} : { getMetrics: () => ({ metrics: metrics.render() }) }),
  };
  const network = {
    ...createStateService({ ip, sysctl: new SysctlFs(), log, queue, ...(gate ? { gate } : {}) }),
    ...createLookupService({ ip, log }),
  };
  return registry
    .register(
      AgentService,
      guardReads(kata, gate, "grpc.AgentService", ["listInterfaces", "listRoutes", "getIPTables"]),
    )
    .register(
      Network,
      guardReads(network, gate, "netagent.v1.Network", ["get", "read", "routeGet"]),
    );
}

/**
 * Before serving: leads a process group of its own (so a next agent can find
 * the processes this one starts), opens the change journal and, when the
 * last agent died mid-change, puts the state back (recover.ts). Undefined
 * when the state directory is not usable (exit 2).
 */
async function recoverJournal(
  config: { stateDir: string; ipBin?: string },
  log: Logger,
): Promise<Journal | undefined> {
  const group = leadProcessGroup();
  if ("reason" in group) {
    log.warn("no process group of its own: a restart cannot wait for what this agent leaves", {
      reason: group.reason,
    });
  }
  let journal: Journal;
  try {
    journal = Journal.open({
      dir: config.stateDir,
      log,
      owner: {
        pid: process.pid,
        start: readProcStat("self")?.start ?? 0,
        ...("pgid" in group ? { pgid: group.pgid } : {}),
      },
      bootId: bootId(),
      netns: netnsId(),
    });
  } catch (err) {
    if (!(err instanceof StateDirError)) throw err;
    log.error("cannot use the state directory", { error: err.message });
    process.stderr.write(`netagent: ${err.message}\n`);
    return undefined;
  }
  await recoverAtStart({
    journal,
    log,
    ip: new IpRunner({ binary: config.ipBin ?? "ip" }),
    sysctl: new SysctlFs(),
    iptables: new IptablesRunner(),
  });
  return journal;
}

/**
 * The configuration from the flags and the kernel command line, or the
 * exit code when there is nothing to serve: 0 after --help or --version,
 * 2 (usage printed) for a bad value.
 */
function configOrExit(argv: string[]): AgentConfig | number {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(argv, readCmdline());
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`netagent: ${err.message}\n${USAGE}`);
      return 2;
    }
    throw err;
  }
  if (parsed.kind === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed.kind === "version") {
    process.stdout.write(`netagent ${AGENT_VERSION}\n`);
    return 0;
  }
  return parsed.config;
}

async function main(argv: string[]): Promise<number> {
  const config = configOrExit(argv);
  if (typeof config === "number") return config;
  const log = createLogger(config.logLevel);
  // Handlers go in before listening: a signal that arrives between
  // "listening" and their registration would otherwise kill the process
  // without a graceful shutdown. An early signal waits for the server.
  let signalled: ((signal: string) => void) | string | undefined;
  const onSignal = (signal: string) => {
    if (typeof signalled === "function") signalled(signal);
    else signalled ??= signal;
  };
  // A rejected promise nobody awaited is a bug to log, not a reason to drop
  // every connection: calls never reject (run-call.ts), this is the backstop.
  process.on("unhandledRejection", (reason) => {
    log.error("unhandled rejection (agent keeps serving)", { error: errorText(reason) });
  });
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  let loaded: Awaited<ReturnType<typeof loadPolicy>>;
  try {
    loaded = await loadPolicy(config.policy);
  } catch (err) {
    if (!(err instanceof PolicyError)) throw err;
    log.error("the network policy does not parse: not starting", { error: err.message });
    process.stderr.write(`netagent: ${err.message}\n`);
    return 2;
  }
  const journal = await recoverJournal(config, log);
  if (journal === undefined) return 2;
  const metrics = new AgentMetrics();
  const policy = loaded && startPolicy(loaded, config.stateDir, log);
  const session = config.ipSession ? new IpSession(config.ipBin ?? "ip") : undefined;
  // The IPv6 rules and listings of a Get, an Apply's read back and a Read: a process each
  // without it. Started at its first use, not warmed: the Kata calls never list IPv6 rules.
  const session6 = config.ipSession ? new IpSession(config.ipBin ?? "ip", true) : undefined;
  // The resident ip is started once the first call is answered (or a while
  // after listening, whichever comes first), not before: on a guest's one
  // vCPU its start would delay that first answer, the shim's Check; the
  // shim's next call comes after a round trip, which the start fills.
  let warmTimer: ReturnType<typeof setTimeout> | undefined;
  const warm = () => {
    if (warmTimer !== undefined) clearTimeout(warmTimer);
    warmTimer = undefined;
    session?.warm();
  };
  const server = new AgentServer({
    registry: buildRegistry({
      log,
      metrics,
      journal,
      front: config.upstream !== undefined,
      ...(policy ? { gate: policy.gate } : {}),
      ...(session ? { session } : {}),
      ...(session6 ? { session6 } : {}),
      ...(config.ipBin === undefined ? {} : { ipBin: config.ipBin }),
    }),
    log,
    onCall: (info) => {
      metrics.recordCall(info);
      if (warmTimer !== undefined) warm();
    },
    ...(config.upstream
      ? {
          front: {
            upstream: config.upstream,
            ...frontHooks(
              appendMetrics(() => metrics.render()),
              policy?.watch,
            ),
          },
        }
      : {}),
    maxConnections: config.maxConnections,
    stallTimeoutMs: config.stallTimeoutMs,
    ...(config.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: config.idleTimeoutMs }),
  });
  try {
    // vsock peers are logged by CID, and refused when --vsock-allow-cid leaves them out.
    const accept =
      config.listen.kind === "vsock"
        ? guardVsockPeers(server.accept, config.vsockAllowCids, log)
        : server.accept;
    server.addListener(await listen(config.listen, config.listenText, accept));
  } catch (err) {
    log.error("cannot listen", { address: config.listenText, error: (err as Error).message });
    process.stderr.write(
      `netagent: cannot listen on ${config.listenText}: ${(err as Error).message}\n`,
    );
    return 2;
  }
  if (session) warmTimer = setTimeout(warm, SESSION_WARM_AFTER_MS);
  log.info("listening", {
    address: config.listenText,
    ...(config.upstream ? { upstream: config.upstream.text } : {}),
    version: AGENT_VERSION,
    pid: process.pid,
    ...(config.vsockAllowCids ? { vsockAllowCids: [...config.vsockAllowCids] } : {}),
  });

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      if (warmTimer !== undefined) clearTimeout(warmTimer);
      log.info("shutting down", { signal, activeConnections: server.connectionCount });
      server.shutdown(config.shutdownGraceMs, SHUTDOWN_SETTLE_MS).then((clean) => {
        log.flush();
        log.info("stopped", { clean });
        resolve(0);
      });
    };
    const early = signalled;
    signalled = stop;
    if (typeof early === "string") stop(early);
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`netagent: fatal: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
