/**
 * How the agent's method table reads, writes and answers errors: its own
 * fast readers and writers (src/wire/fast-codecs.ts) and its edge table
 * (error-status.ts). Tests that serve the agent's services in-process use
 * the same, so they exercise the paths the agent runs.
 */

import { toTtrpcError } from "../../common/error-status";
import type { RegistryOptions } from "../../ttrpc/service";
import { FAST_DECODERS, FAST_ENCODERS } from "../../wire/fast-codecs";

export const AGENT_REGISTRY_OPTIONS: Readonly<RegistryOptions> = {
  decoders: FAST_DECODERS,
  encoders: FAST_ENCODERS,
  toError: toTtrpcError,
};
