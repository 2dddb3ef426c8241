import React from 'react';
import { PanelProps } from '@grafana/data';
import { PanelDataErrorView } from '@grafana/runtime';
import { NoTraffic } from '../model/traffic';

/** Said when the series exist but none counts a call: Grafana's own words would be "Cannot visualize data". */
export const ALL_ZERO_MESSAGE = 'No calls in this time range';

/**
 * Grafana's own empty state, as every core panel shows it: with no series it says the panel's
 * "No value" text, else "No data"; with series of nothing but zeros, that there were no calls.
 */
export function NoTrafficView({ reason, props }: { reason: NoTraffic; props: PanelProps }) {
  return (
    <div data-role="no-traffic" data-reason={reason} style={{ flex: '1 1 auto', minHeight: 0 }}>
      <PanelDataErrorView
        panelId={props.id}
        data={props.data}
        fieldConfig={props.fieldConfig}
        message={reason === 'all-zero' ? (props.fieldConfig.defaults.noValue ?? ALL_ZERO_MESSAGE) : undefined}
      />
    </div>
  );
}
