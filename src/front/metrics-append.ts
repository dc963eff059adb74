/**
 * GetMetrics in front mode: the upstream's Prometheus text with netagent's
 * own metrics (all `netagent_`) appended, as one answer. An answer that is
 * not a Metrics message, or would not fit a frame with them, goes back as
 * the upstream sent it.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { MetricsSchema } from "../gen/agent_pb";
import { ResponseSchema } from "../gen/ttrpc_pb";
import { MAX_DATA_LENGTH } from "../ttrpc/frame";
import type { AnswerHook } from "./forwarder";

/** The hook that appends `render()` to the upstream's GetMetrics answers. */
export function appendMetrics(render: () => string): AnswerHook {
  return (call, answer) => {
    const { service, method } = call.request;
    if (service !== "grpc.AgentService" || method !== "GetMetrics") return answer;
    let text: string;
    let response: ReturnType<typeof fromBinary<typeof ResponseSchema>>;
    try {
      response = fromBinary(ResponseSchema, answer.response);
      text = fromBinary(MetricsSchema, response.payload).metrics;
    } catch {
      return answer;
    }
    const joined = `${text}${text === "" || text.endsWith("\n") ? "" : "\n"}${render()}`;
    response.payload = toBinary(MetricsSchema, create(MetricsSchema, { metrics: joined }));
    const bytes = toBinary(ResponseSchema, response);
    return bytes.length > MAX_DATA_LENGTH ? answer : { ...answer, response: bytes };
  };
}
