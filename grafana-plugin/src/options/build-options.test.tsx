import React from 'react';
import { fireEvent, render, screen } from '@testing-library/react';
import { PanelOptionsEditorBuilder, StandardEditorsRegistryItem } from '@grafana/data';
import { plugin } from '../module';
import { PanelOptions } from '../types';
import { buildOptions } from './build-options';
import { DEFAULT_OPTIONS, withDefaults } from './defaults';

function items() {
  const builder = new PanelOptionsEditorBuilder<PanelOptions>();
  buildOptions(builder);
  return builder.getItems();
}

const item = (path: string) => {
  const found = items().find((i) => i.path === path);
  if (!found) {
    throw new Error(`no option ${path}`);
  }
  return found;
};

describe('panel options', () => {
  it('offers every option of the contract, each with its default', () => {
    const defaults = Object.fromEntries(items().map((i) => [i.path, i.defaultValue]));
    expect(defaults).toEqual(DEFAULT_OPTIONS);
  });

  it('gives the plugin the defaults the dashboards rely on', () => {
    expect(plugin.defaults).toMatchObject({ mode: 'protocols', baseline: 'rest', reducer: 'mean', skewThreshold: 1.5 });
    expect((plugin.defaults as PanelOptions).metrics).toEqual([
      'p50',
      'p95',
      'p99',
      'rate',
      'errors',
      'deadline_miss',
      'resets',
      'req_bytes',
      'resp_bytes',
    ]);
  });

  it('shows each option only in the modes that use it', () => {
    const shown = (mode: PanelOptions['mode']) =>
      items()
        .filter((i) => !i.showIf || i.showIf({ ...DEFAULT_OPTIONS, mode }, []))
        .map((i) => i.path);
    expect(shown('protocols')).toEqual([
      'mode',
      'baseline',
      'metrics',
      'reducer',
      'sortBy',
      'showSparklines',
      'relativeThreshold',
      'ratioThreshold',
      'minCalls',
      'latencyUnit',
      'bytesUnit',
      'rateUnit',
    ]);
    expect(shown('beforeAfter')).toEqual([
      'mode',
      'metrics',
      'reducer',
      'sortBy',
      'relativeThreshold',
      'ratioThreshold',
      'minCalls',
      'latencyUnit',
      'bytesUnit',
      'rateUnit',
    ]);
    expect(shown('pods')).toEqual(['mode', 'reducer', 'skewThreshold', 'podLabel', 'rateUnit']);
  });

  it('renders the mode editor, which reports the chosen mode', () => {
    const mode = item('mode');
    const Editor = mode.editor as StandardEditorsRegistryItem['editor'];
    const onChange = jest.fn();
    render(<Editor value="protocols" onChange={onChange} item={mode} context={{ data: [] }} />);
    fireEvent.click(screen.getByLabelText('Pods'));
    expect(onChange).toHaveBeenCalledWith('pods');
  });

  it('fills options a saved panel lacks with their defaults', () => {
    expect(withDefaults({ mode: 'pods', skewThreshold: 2 })).toEqual({ ...DEFAULT_OPTIONS, mode: 'pods', skewThreshold: 2 });
  });
});
