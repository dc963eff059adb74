/**
 * The compiled agent (dist/netagent, from `npm run build`) started on a
 * unix socket in a temporary directory.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Child, start, waitForSocket } from "./process";
import { type TempDir, tempDir } from "./tmp";

export const NETAGENT = fileURLToPath(new URL("../../dist/netagent", import.meta.url));

/** Fails with a clear message when the agent has not been built. */
export function requireAgentBinary(): string {
  if (!existsSync(NETAGENT)) {
    throw new Error(`${NETAGENT} is missing: run \`npm run build\` first`);
  }
  return NETAGENT;
}

export interface RunningAgent {
  child: Child;
  socket: string;
  dir: TempDir;
  /** SIGTERM by PID, wait for exit, remove the directory. */
  stop(): Promise<void>;
}

/** Starts dist/netagent on a fresh unix socket and waits until it accepts connections. */
export async function startAgent(extraArgs: readonly string[] = []): Promise<RunningAgent> {
  const dir = tempDir();
  const socket = dir.join("agent.sock");
  const child = start(requireAgentBinary(), ["--listen", `unix://${socket}`, ...extraArgs]);
  try {
    await waitForSocket(child, socket);
  } catch (err) {
    await child.kill();
    dir.remove();
    throw err;
  }
  return {
    child,
    socket,
    dir,
    async stop() {
      try {
        await child.stop("SIGTERM");
      } finally {
        await child.kill();
        dir.remove();
      }
    },
  };
}
