/** grpc.Health: Check answers SERVING, Version names this agent. */
import { create } from "@bufbuild/protobuf";
import {
  type Health,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
  VersionCheckResponseSchema,
} from "../../gen/health_pb";
import type { ServiceImpl } from "../../ttrpc/service";
import { AGENT_VERSION, API_VERSION } from "../version";

const SERVING = create(HealthCheckResponseSchema, {
  status: HealthCheckResponse_ServingStatus.SERVING,
});
const VERSION = create(VersionCheckResponseSchema, {
  agentVersion: AGENT_VERSION,
  grpcVersion: API_VERSION,
});

export const healthService: ServiceImpl<typeof Health> = {
  check: () => SERVING,
  version: () => VERSION,
};
