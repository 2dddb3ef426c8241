import { DataFrame, dateTime, EventBusSrv, FieldConfigSource, LoadingState, PanelProps, TimeRange } from '@grafana/data';
import { withDefaults } from '../src/options/defaults';
import { PanelOptions } from '../src/types';

/** The props Grafana passes a panel, around the given frames and options. */
export function panelProps(series: DataFrame[], options: Partial<PanelOptions>, range?: TimeRange): PanelProps<PanelOptions> {
  const timeRange =
    range ??
    (() => {
      const from = dateTime(1_700_000_000_000);
      const to = dateTime(1_700_003_600_000);
      return { from, to, raw: { from, to } };
    })();
  const fieldConfig: FieldConfigSource = { defaults: {}, overrides: [] };
  return {
    id: 1,
    data: { state: LoadingState.Done, series, timeRange },
    timeRange,
    timeZone: 'utc',
    options: withDefaults(options),
    fieldConfig,
    transparent: false,
    width: 900,
    height: 600,
    renderCounter: 0,
    title: 'rpcscope',
    eventBus: new EventBusSrv(),
    onOptionsChange: () => {},
    onFieldConfigChange: () => {},
    replaceVariables: (s: string) => s,
    onChangeTimeRange: () => {},
  };
}
