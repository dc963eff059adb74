/** netagent's metrics text (src/agent/services/metrics.ts): escaping, histogram sums, the bound on series. */
import { describe, expect, it } from "vitest";
import { AgentMetrics, MAX_CALL_SERIES } from "../../src/agent/services/metrics";
import { Code } from "../../src/ttrpc/codes";

const call = (service: string, method: string, code = Code.OK, durationMs = 2) => ({
  streamId: 1,
  service,
  method,
  code,
  message: "",
  durationMs,
});

describe("AgentMetrics", () => {
  it("counts by code and buckets latency cumulatively", () => {
    const m = new AgentMetrics();
    m.recordCall(call("grpc.Health", "Check", Code.OK, 0.5));
    m.recordCall(call("grpc.Health", "Check", Code.OK, 30));
    m.recordCall(call("grpc.Health", "Check", Code.UNAVAILABLE, 70_000));
    const text = m.render();
    expect(text).toContain(
      'netagent_calls_total{service="grpc.Health",method="Check",code="OK"} 2',
    );
    expect(text).toContain(
      'netagent_calls_total{service="grpc.Health",method="Check",code="UNAVAILABLE"} 1',
    );
    const labels = 'service="grpc.Health",method="Check"';
    expect(text).toContain(`netagent_call_duration_seconds_bucket{${labels},le="0.001"} 1`);
    expect(text).toContain(`netagent_call_duration_seconds_bucket{${labels},le="0.05"} 2`);
    expect(text).toContain(`netagent_call_duration_seconds_bucket{${labels},le="60"} 2`);
    expect(text).toContain(`netagent_call_duration_seconds_bucket{${labels},le="+Inf"} 3`);
    expect(text).toContain(`netagent_call_duration_seconds_count{${labels}} 3`);
    expect(text.endsWith("\n")).toBe(true);
  });

  it("escapes label values a peer chose", () => {
    const m = new AgentMetrics();
    m.recordCall(call('x"y', "a\\b\nc"));
    expect(m.render()).toContain('service="x\\"y",method="a\\\\b\\nc",code="OK"} 1');
  });

  it(`keeps ${MAX_CALL_SERIES} method series apart, counts the rest as other`, () => {
    const m = new AgentMetrics();
    for (let i = 0; i < MAX_CALL_SERIES + 50; i++) m.recordCall(call("svc", `m${i}`));
    m.recordCall(call("svc", "x".repeat(1000)));
    const lines = m
      .render()
      .split("\n")
      .filter((l) => l.startsWith("netagent_calls_total{"));
    expect(lines).toHaveLength(MAX_CALL_SERIES + 1);
    expect(lines).toContain('netagent_calls_total{service="other",method="other",code="OK"} 51');
    // A name seen before the cap keeps its own series after it.
    m.recordCall(call("svc", "m0"));
    expect(m.render()).toContain('netagent_calls_total{service="svc",method="m0",code="OK"} 2');
  });
});
