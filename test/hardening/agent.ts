/**
 * dist/netagent for the hardening tests: any flags, an optional environment
 * (`ipBin`: a stand-in `ip`, passed as --ip-bin) and an optional netns. The shared
 * starter does the work; this keeps the hardening tests' vocabulary.
 */
import { type RunningAgent, type StartAgentOptions, startAgent } from "../helpers/agent";

export type AgentOptions = StartAgentOptions;

export function startHardenedAgent(opts: AgentOptions = {}): Promise<RunningAgent> {
  return startAgent(opts);
}
