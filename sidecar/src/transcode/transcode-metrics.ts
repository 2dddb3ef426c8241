// The metrics of translated calls. The caller's protocol stays the `protocol`
// label of the call metrics (docs/metrics.md); these say which of those calls
// were translated on the way (`translation`: rest_to_grpc, grpc_web_to_grpc)
// and how long the translating itself took. Cells are bound once per label
// set, as in observe/metric-cells.ts, and rendered on a scrape.
import { HistogramFamily, ValueFamily, type HistogramCell, type MetricFamily, type ValueCell } from '../observe/metric-cells.ts';

export type Translation = 'rest_to_grpc' | 'grpc_web_to_grpc';

// Translating one message is microseconds to a few milliseconds for large ones.
const TRANSLATE_SECONDS = [0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01];

export class TranscodeMetrics {
  private readonly calls = new ValueFamily('rpcscope_translated_calls_total', 'Calls translated to gRPC toward the upstream, by the caller protocol, the translation and the operation', 'counter');
  private readonly seconds = new HistogramFamily('rpcscope_translation_seconds', 'Time spent translating messages of a call (request and response, JSON or gRPC-Web to and from gRPC), by translation', TRANSLATE_SECONDS);
  private readonly callCells = new Map<string, ValueCell>();
  private readonly secondCells = new Map<string, HistogramCell>();

  translated(protocol: string, translation: Translation, operation: string): void {
    const key = `${protocol}\0${translation}\0${operation}`;
    let c = this.callCells.get(key);
    if (!c) this.callCells.set(key, (c = this.calls.cell({ protocol, translation, operation })));
    c.value++;
  }

  translateTime(translation: Translation, seconds: number): void {
    let c = this.secondCells.get(translation);
    if (!c) this.secondCells.set(translation, (c = this.seconds.cell({ translation })));
    c.record(seconds);
  }

  /** Served on /metrics and pushed over OTLP with the call metrics. */
  get families(): readonly MetricFamily[] {
    return [this.calls, this.seconds];
  }
}
