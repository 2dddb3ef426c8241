import React, { useMemo } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, PanelProps } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';
import { detailNotices } from '../model/detail-level';
import { diagnose } from '../model/expectations';
import { readSeries } from '../model/series';
import { noTraffic } from '../model/traffic';
import { withDefaults } from '../options/defaults';
import { PanelOptions } from '../types';
import { BeforeAfterView } from './before-after-view';
import { DetailNotices } from './detail-notice';
import { MissingData } from './missing-data';
import { NoTrafficView } from './no-traffic';
import { PodsView } from './pods-view';
import { ProtocolsView } from './protocols-view';

export function ProtocolComparePanel(props: PanelProps<PanelOptions>) {
  const { data, width, height, timeZone, timeRange, replaceVariables } = props;
  const styles = useStyles2(getStyles);
  const options = useMemo(() => withDefaults(props.options), [props.options]);
  const series = useMemo(() => readSeries(data.series), [data.series]);
  const queried = useMemo(
    () => data.request?.targets?.filter((t) => !t.hide).map((t) => t.refId) ?? null,
    [data.request]
  );
  const diagnosis = useMemo(() => diagnose(series, options, queried), [series, options, queried]);
  const idle = useMemo(
    () => noTraffic(series, { mode: options.mode, metrics: options.metrics, queried }),
    [series, options, queried]
  );
  const notices = useMemo(() => detailNotices(data.request?.targets ?? [], series), [data.request, series]);
  const rangeSeconds = Math.max(1, (timeRange.to.valueOf() - timeRange.from.valueOf()) / 1000);

  let body: React.ReactNode;
  // An idle service first: its all-zero series would otherwise pass as data, and its empty answer
  // is no mistake in the queries. The query help is for queries the mode cannot read.
  if (idle && (diagnosis === null || idle === 'no-series')) {
    body = <NoTrafficView reason={idle} props={props} />;
  } else if (diagnosis) {
    body = <MissingData diagnosis={diagnosis} />;
  } else if (options.mode === 'beforeAfter') {
    body = <BeforeAfterView series={series} options={options} rangeSeconds={rangeSeconds} replaceVariables={replaceVariables} />;
  } else if (options.mode === 'pods') {
    body = <PodsView series={series} options={options} width={width} timeZone={timeZone} />;
  } else {
    body = <ProtocolsView series={series} options={options} width={width} rangeSeconds={rangeSeconds} replaceVariables={replaceVariables} />;
  }
  return (
    <div className={styles.root} style={{ width, height }} data-testid="rpcscope-panel" data-mode={options.mode}>
      <DetailNotices notices={notices} />
      {body}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  // A column: the headline keeps its height, the table below takes the rest and scrolls.
  root: css({
    display: 'flex',
    flexDirection: 'column',
    overflow: 'auto',
    color: theme.colors.text.primary,
    fontSize: theme.typography.body.fontSize,
  }),
});
