/**
 * The services the agent serves, as their generated descriptors: the one
 * list. main.ts's buildRegistry registers an implementation of each (in
 * front mode grpc.Health is the upstream's), and netagentctl's `call`
 * finds methods and their JSON types in it, so the host tool knows every
 * service the agent has (test/unit/served-services.test.ts holds the two,
 * and every service of proto/, to the same set).
 */
import { AgentService } from "../../gen/agent_pb";
import { Health } from "../../gen/health_pb";
import { Network } from "../../gen/network_pb";

export const SERVED_SERVICES = [Health, AgentService, Network] as const;
