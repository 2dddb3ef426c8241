import { FieldConfigProperty, PanelPlugin, ThresholdsMode } from '@grafana/data';
import { ProtocolComparePanel } from './components/protocol-compare-panel';
import { RPC_OVERVIEW_LINK } from './model/operation-links';
import { buildOptions } from './options/build-options';
import { PanelOptions } from './types';

export const plugin = new PanelPlugin<PanelOptions>(ProtocolComparePanel).setPanelOptions(buildOptions).useFieldConfig({
  // "Standard options" as in every panel, per query through overrides (refId p99 → unit ms):
  // unit and decimals format the cells; thresholds colour a value once they have a step
  // past the base (the single base step leaves the better/worse colours alone); data links
  // make each operation's name a link, by default to the RPC overview for that operation.
  standardOptions: {
    [FieldConfigProperty.Thresholds]: {
      defaultValue: { mode: ThresholdsMode.Absolute, steps: [{ value: -Infinity, color: 'text' }] },
    },
    [FieldConfigProperty.Links]: { defaultValue: [RPC_OVERVIEW_LINK] },
  },
  disableStandardOptions: [
    FieldConfigProperty.Min,
    FieldConfigProperty.Max,
    FieldConfigProperty.FieldMinMax,
    FieldConfigProperty.DisplayName,
    FieldConfigProperty.NoValue,
    FieldConfigProperty.Mappings,
    FieldConfigProperty.Actions,
    FieldConfigProperty.Filterable,
  ],
});
