/**
 * netagent's own metrics in the Prometheus text format, for GetMetrics (the
 * Kata agent's method: its answer is Prometheus text). Every name has the
 * `netagent_` prefix so that, appended to the Kata agent's text in front
 * mode, nothing clashes. Calls are counted by service, method and status
 * code, with their latency; processes by program (src/process/started.ts);
 * rollbacks by what was put back (rollbacks.ts).
 *
 * Bounded: service and method names come from peers (in front mode any
 * name is forwarded), so at most {@link MAX_CALL_SERIES} of them are kept
 * apart; calls to further names count under service and method "other".
 */
import { startedCounts } from "../../process/started";
import { codeName } from "../../ttrpc/codes";
import type { CallInfo } from "../../ttrpc/server-connection";
import { rollbackCounts } from "../apply/rollbacks";
import { refusalLines } from "../policy/refusals";

/** Distinct service/method pairs kept apart in the call metrics. */
export const MAX_CALL_SERIES = 128;
/** Longest service or method name kept as a label value (longer ones are "other"). */
const MAX_NAME_LABEL = 128;
/** Latency buckets, seconds. */
const BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60] as const;

interface MethodSeries {
  service: string;
  method: string;
  codes: Map<string, number>;
  /** Calls at or under each bucket (not cumulative here: summed when rendered). */
  buckets: number[];
  count: number;
  sumSeconds: number;
}

function newSeries(service: string, method: string): MethodSeries {
  return {
    service,
    method,
    codes: new Map(),
    buckets: BUCKETS.map(() => 0),
    count: 0,
    sumSeconds: 0,
  };
}

/** Label value escaping of the text format: backslash, double quote, newline. */
function label(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

export class AgentMetrics {
  /** By service, then method: no key string built per call. */
  private readonly byName = new Map<string, Map<string, MethodSeries>>();
  private readonly series: MethodSeries[] = [];
  private other: MethodSeries | undefined;

  /** Counts one answered call (the server's onCall). */
  readonly recordCall = (info: CallInfo): void => {
    const s = this.seriesOf(info.service, info.method);
    const code = codeName(info.code);
    s.codes.set(code, (s.codes.get(code) ?? 0) + 1);
    const seconds = info.durationMs / 1000;
    for (let i = 0; i < BUCKETS.length; i++) {
      if (seconds <= (BUCKETS[i] as number)) {
        s.buckets[i] = (s.buckets[i] ?? 0) + 1;
        break;
      }
    }
    s.count++;
    s.sumSeconds += seconds;
  };

  private seriesOf(service: string, method: string): MethodSeries {
    const found = this.byName.get(service)?.get(method);
    if (found !== undefined) return found;
    const fits = service.length <= MAX_NAME_LABEL && method.length <= MAX_NAME_LABEL;
    if (!fits || this.series.length >= MAX_CALL_SERIES) {
      this.other ??= newSeries("other", "other");
      return this.other;
    }
    const s = newSeries(service, method);
    let methods = this.byName.get(service);
    if (methods === undefined) {
      methods = new Map();
      this.byName.set(service, methods);
    }
    methods.set(method, s);
    this.series.push(s);
    return s;
  }

  /** The metrics as Prometheus text, ending with a newline. */
  render(): string {
    const out: string[] = [];
    out.push(
      "# HELP netagent_calls_total Calls answered by netagent (forwarded ones included), by service, method and status code.",
      "# TYPE netagent_calls_total counter",
    );
    const all = this.other ? [...this.series, this.other] : this.series;
    for (const s of all) {
      for (const [code, n] of s.codes) {
        out.push(
          `netagent_calls_total{service="${label(s.service)}",method="${label(s.method)}",code="${code}"} ${n}`,
        );
      }
    }
    out.push(
      "# HELP netagent_call_duration_seconds Time from a call's request to its answer.",
      "# TYPE netagent_call_duration_seconds histogram",
    );
    for (const s of all) {
      const labels = `service="${label(s.service)}",method="${label(s.method)}"`;
      let cumulative = 0;
      BUCKETS.forEach((b, i) => {
        cumulative += s.buckets[i] ?? 0;
        out.push(`netagent_call_duration_seconds_bucket{${labels},le="${b}"} ${cumulative}`);
      });
      out.push(`netagent_call_duration_seconds_bucket{${labels},le="+Inf"} ${s.count}`);
      out.push(`netagent_call_duration_seconds_sum{${labels}} ${s.sumSeconds}`);
      out.push(`netagent_call_duration_seconds_count{${labels}} ${s.count}`);
    }
    const programs = [...startedCounts()];
    out.push(
      "# HELP netagent_processes_started_total Processes netagent started, by program (ip, iptables-restore, ...).",
      "# TYPE netagent_processes_started_total counter",
      ...programs.map(
        ([p, c]) => `netagent_processes_started_total{program="${label(p)}"} ${c.started}`,
      ),
      "# HELP netagent_processes_running Processes of netagent's running now, by program.",
      "# TYPE netagent_processes_running gauge",
      ...programs.map(([p, c]) => `netagent_processes_running{program="${label(p)}"} ${c.running}`),
      "# HELP netagent_rollbacks_total Changes undone after a failure, by what was put back and whether the restore finished.",
      "# TYPE netagent_rollbacks_total counter",
      ...rollbackCounts().map(
        (r) => `netagent_rollbacks_total{what="${r.kind}",result="${r.result}"} ${r.count}`,
      ),
      ...refusalLines(),
    );
    return `${out.join("\n")}\n`;
  }
}
