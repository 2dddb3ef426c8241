import { PanelPlugin } from '@grafana/data';
import { ProtocolComparePanel } from './components/protocol-compare-panel';
import { buildOptions } from './options/build-options';
import { PanelOptions } from './types';

export const plugin = new PanelPlugin<PanelOptions>(ProtocolComparePanel).setPanelOptions(buildOptions);
