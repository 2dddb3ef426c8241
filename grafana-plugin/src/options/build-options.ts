import { PanelOptionsEditorBuilder, SelectableValue } from '@grafana/data';
import { METRICS } from '../model/metric-catalog';
import { BytesUnit, LatencyUnit, MetricKey, Mode, PanelOptions, PROTOCOLS, RateUnit, Reducer, SortBy } from '../types';
import { protocolLabel } from '../model/protocol-names';
import { DEFAULT_OPTIONS } from './defaults';

export { protocolLabel };

const not = (mode: Mode) => (o: PanelOptions) => o.mode !== mode;
const only = (mode: Mode) => (o: PanelOptions) => o.mode === mode;

export function buildOptions(builder: PanelOptionsEditorBuilder<PanelOptions>): PanelOptionsEditorBuilder<PanelOptions> {
  return builder
    .addRadio<Mode, { options: Array<{ value: Mode; label: string; description: string }> }>({
      path: 'mode',
      name: 'Mode',
      defaultValue: DEFAULT_OPTIONS.mode,
      settings: {
        options: [
          { value: 'protocols', label: 'Protocols', description: 'Each operation over each protocol, against a baseline protocol' },
          { value: 'beforeAfter', label: 'Before/after', description: 'Each operation over two time ranges' },
          { value: 'pods', label: 'Pods', description: 'Call share, skew and connections per pod or endpoint' },
        ],
      },
    })
    .addSelect({
      path: 'baseline',
      name: 'Baseline protocol',
      description: 'The other protocols are compared with this one',
      defaultValue: DEFAULT_OPTIONS.baseline,
      settings: { options: PROTOCOLS.map((p) => ({ value: p, label: protocolLabel(p) })) },
      showIf: only('protocols'),
    })
    .addMultiSelect({
      path: 'metrics',
      name: 'Metrics shown',
      description: 'Rows per operation, in this order; each reads the query with the same refId',
      defaultValue: DEFAULT_OPTIONS.metrics,
      // The builder types each option's value as the option's whole value (the array), while
      // Grafana's multi-select editor lists single values: hence the cast.
      settings: {
        options: METRICS.map((m) => ({ value: m.key, label: m.label, description: `refId ${m.key}` })) as unknown as Array<
          SelectableValue<MetricKey[]>
        >,
      },
      showIf: not('pods'),
    })
    .addRadio<Reducer, { options: Array<{ value: Reducer; label: string }> }>({
      path: 'reducer',
      name: 'Value over the range',
      description: 'How each series becomes the one number shown',
      defaultValue: DEFAULT_OPTIONS.reducer,
      settings: {
        options: [
          { value: 'mean', label: 'Mean' },
          { value: 'last', label: 'Last' },
          { value: 'max', label: 'Max' },
        ],
      },
    })
    .addRadio<SortBy, { options: Array<{ value: SortBy; label: string; description: string }> }>({
      path: 'sortBy',
      name: 'Sort operations by',
      defaultValue: DEFAULT_OPTIONS.sortBy,
      settings: {
        options: [
          { value: 'change', label: 'Largest change', description: 'The headline order: changes spanning the most thresholds first' },
          { value: 'calls', label: 'Calls', description: 'Busiest first' },
          { value: 'name', label: 'Name', description: 'Alphabetical' },
        ],
      },
      showIf: not('pods'),
    })
    .addBooleanSwitch({
      path: 'showSparklines',
      name: 'Sparklines',
      defaultValue: DEFAULT_OPTIONS.showSparklines,
      showIf: only('protocols'),
    })
    .addNumberInput({
      path: 'relativeThreshold',
      name: 'Change threshold (%)',
      description: 'A relative change smaller than this is shown as unchanged, not better or worse',
      category: ['Thresholds'],
      defaultValue: DEFAULT_OPTIONS.relativeThreshold,
      settings: { min: 0 },
      showIf: not('pods'),
    })
    .addNumberInput({
      path: 'ratioThreshold',
      name: 'Ratio threshold (percentage points)',
      description: 'Error and deadline-miss ratios moving less than this are shown as unchanged',
      category: ['Thresholds'],
      defaultValue: DEFAULT_OPTIONS.ratioThreshold,
      settings: { min: 0 },
      showIf: not('pods'),
    })
    .addNumberInput({
      path: 'minCalls',
      name: 'Minimum calls per side',
      description: 'Fewer calls than this on either side keeps a change out of the headline and marks it unreliable',
      category: ['Thresholds'],
      defaultValue: DEFAULT_OPTIONS.minCalls,
      settings: { min: 0, integer: true },
      showIf: not('pods'),
    })
    .addNumberInput({
      path: 'skewThreshold',
      name: 'Skew threshold (max / mean)',
      description: 'A skew at or above this is flagged and its busiest pod marked as pinned',
      category: ['Thresholds'],
      defaultValue: DEFAULT_OPTIONS.skewThreshold,
      settings: { min: 1 },
      showIf: only('pods'),
    })
    .addTextInput({
      path: 'podLabel',
      name: 'Pod label',
      description: 'Label naming the pod or endpoint; empty picks the first of pod, upstream, instance',
      defaultValue: DEFAULT_OPTIONS.podLabel,
      settings: { placeholder: 'pod' },
      showIf: only('pods'),
    })
    .addRadio<LatencyUnit, { options: Array<{ value: LatencyUnit; label: string }> }>({
      path: 'latencyUnit',
      name: 'Latency',
      category: ['Units'],
      defaultValue: DEFAULT_OPTIONS.latencyUnit,
      settings: {
        options: [
          { value: 'auto', label: 'Auto' },
          { value: 'ms', label: 'ms' },
          { value: 's', label: 's' },
        ],
      },
      showIf: not('pods'),
    })
    .addRadio<BytesUnit, { options: Array<{ value: BytesUnit; label: string }> }>({
      path: 'bytesUnit',
      name: 'Payload size',
      category: ['Units'],
      defaultValue: DEFAULT_OPTIONS.bytesUnit,
      settings: {
        options: [
          { value: 'iec', label: 'KiB (1024)' },
          { value: 'si', label: 'kB (1000)' },
        ],
      },
      showIf: not('pods'),
    })
    .addRadio<RateUnit, { options: Array<{ value: RateUnit; label: string }> }>({
      path: 'rateUnit',
      name: 'Rates',
      category: ['Units'],
      defaultValue: DEFAULT_OPTIONS.rateUnit,
      settings: {
        options: [
          { value: 'per_second', label: 'per second' },
          { value: 'per_minute', label: 'per minute' },
        ],
      },
    });
}
