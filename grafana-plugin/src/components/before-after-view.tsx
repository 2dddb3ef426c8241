import React, { useMemo, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, InterpolateFunction } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import { BeforeAfterRow, buildBeforeAfter } from '../model/before-after';
import { beforeAfterHeadline } from '../model/before-after-headline';
import { displayValue, fieldConfigs, thresholdColor } from '../model/field-display';
import { formatDelta, Units } from '../model/format';
import { beforeAfterText, protocolPath } from '../model/headline-text';
import { metricDef } from '../model/metric-catalog';
import { operationLinks } from '../model/operation-links';
import { SeriesByRefId } from '../model/series';
import { orderRows } from '../model/table-order';
import { PanelOptions } from '../types';
import { DeltaText } from './delta-text';
import { Headline } from './headline';
import { OperationName } from './operation-name';
import { getTableStyles } from './table-styles';

interface Props {
  series: SeriesByRefId;
  options: PanelOptions;
  rangeSeconds: number;
  replaceVariables: InterpolateFunction;
}

/** Changes spelled out in the headline; the rest are in the table's order. */
const HEADLINE_CHANGES = 3;

const calls = (n: number | null) => (n === null ? '–' : Math.round(n).toLocaleString('en-US'));
const rowKey = (row: BeforeAfterRow) => `${row.operation}|${row.protocolBefore}|${row.protocolAfter}`;

/** Why the row's deltas should not be trusted, or null when both sides have enough calls. */
function callsWarning(row: BeforeAfterRow, minCalls: number): string | null {
  if (!row.lowCalls) {
    return null;
  }
  const short: string[] = [];
  if ((row.callsBefore ?? 0) < minCalls) {
    short.push(`${calls(row.callsBefore ?? 0)} before`);
  }
  if ((row.callsAfter ?? 0) < minCalls) {
    short.push(`${calls(row.callsAfter ?? 0)} after`);
  }
  return `Too few calls (${short.join(', ')}; need ${minCalls.toLocaleString('en-US')}): deltas unreliable`;
}

export function BeforeAfterView({ series, options, rangeSeconds, replaceVariables }: Props) {
  const styles = useStyles2(getTableStyles);
  const own = useStyles2(getStyles);
  const theme = useTheme2();
  const [showFew, setShowFew] = useState(false);
  const model = useMemo(() => buildBeforeAfter(series, { ...options, rangeSeconds }), [series, options, rangeSeconds]);
  const headline = useMemo(() => beforeAfterHeadline(model, options), [model, options]);
  const configs = useMemo(() => fieldConfigs(series), [series]);
  const units: Units = options;
  const rank = new Map(headline.changed.map((c, i) => [rowKey(c.row), i]));
  const sorted = orderRows(model.rows, options.sortBy, (r) => r.operation, (r) => rank.get(rowKey(r)));
  const enough = sorted.filter((r) => !r.lowCalls);
  const few = sorted.filter((r) => r.lowCalls);
  const shown = headline.changed.slice(0, HEADLINE_CHANGES);
  const top = shown[0];
  const topChange = top?.changes[0];
  const topDef = topChange && metricDef(topChange.metric);
  const more = headline.changed.length - shown.length;
  const aside = [
    more > 0 ? `${more} more change${more === 1 ? '' : 's'} in the table below.` : '',
    headline.unchanged.length > 0
      ? `${headline.unchanged.length} row${headline.unchanged.length === 1 ? '' : 's'} with enough calls within the thresholds.`
      : '',
    model.callsKnown ? '' : 'Without rate and rate_before the calls behind each change are unknown.',
  ]
    .filter(Boolean)
    .join(' ');

  const renderRow = (row: BeforeAfterRow) => {
    const warning = callsWarning(row, model.minCalls);
    const path = protocolPath(row);
    return (
      <tbody
        key={rowKey(row)}
        data-operation={row.operation}
        data-protocol-before={row.protocolBefore ?? ''}
        data-protocol-after={row.protocolAfter ?? ''}
        data-low-calls={row.lowCalls ? 'true' : 'false'}
      >
        {row.metrics.map((m, i) => {
          const def = metricDef(m.metric);
          const config = configs.get(m.metric);
          return (
            <tr key={m.metric} data-metric={m.metric}>
              {i === 0 && (
                <th scope="rowgroup" rowSpan={row.metrics.length} className={styles.operation}>
                  <OperationName
                    operation={row.operation}
                    links={operationLinks(configs.values(), { operation: row.operation, protocol: row.protocolAfter ?? row.protocolBefore ?? '' }, replaceVariables)}
                  />
                  <span className={own.sub}>{path}</span>
                  {model.callsKnown && (
                    <span className={own.sub} data-role="calls">
                      {`${calls(row.callsBefore)} → ${calls(row.callsAfter)} calls`}
                    </span>
                  )}
                  {warning && (
                    <span className={styles.warning} role="alert">
                      {warning}
                    </span>
                  )}
                </th>
              )}
              <th scope="row" className={styles.metric}>
                {def.label}
              </th>
              <td data-role="before" style={{ color: thresholdColor(m.before, config, theme) ?? undefined }}>
                {displayValue(m.before, def.kind, units, config)}
              </td>
              <td data-role="after" style={{ color: thresholdColor(m.after, config, theme) ?? undefined }}>
                {displayValue(m.after, def.kind, units, config)}
              </td>
              <td data-role="change">
                {m.delta ? (
                  <DeltaText
                    delta={m.delta}
                    kind={def.kind}
                    units={units}
                    description={`${def.label} {delta} after vs before`}
                    muted={row.lowCalls}
                  />
                ) : (
                  '–'
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    );
  };

  return (
    <>
      <Headline
        figure={topChange && topDef ? formatDelta(topChange.delta, topDef.kind, units) : null}
        verdict={topChange?.delta.verdict ?? 'same'}
        caption={top && topDef ? `${topDef.label} of ${top.row.operation}${protocolPath(top.row) ? ` (${protocolPath(top.row)})` : ''}, after vs before` : ''}
        lines={
          shown.length > 0
            ? shown.map((c) => ({ text: beforeAfterText(c, units), role: 'headline-change' }))
            : [
                {
                  text: `No change passes ${options.relativeThreshold} % (ratios ${options.ratioThreshold} pp) on the ${enough.length} row${enough.length === 1 ? '' : 's'} with enough calls.`,
                  role: 'change-none',
                },
              ]
        }
        aside={aside || undefined}
      />
      <div className={styles.scroll} data-role="table-scroll">
      <table className={styles.table}>
        <caption className={styles.caption}>
          {`After (the panel's range) against before (the _before queries); coloured where a change passes ${options.relativeThreshold} % (ratios ${options.ratioThreshold} pp); ${options.reducer} over each range.`}
          {!model.callsKnown && ' Add rate and rate_before queries to check that each side has enough calls.'}
        </caption>
        <thead>
          <tr>
            <th scope="col">Operation</th>
            <th scope="col">Metric</th>
            <th scope="col">Before</th>
            <th scope="col">After</th>
            <th scope="col">Change</th>
          </tr>
        </thead>
        {enough.map(renderRow)}
        {few.length > 0 && (
          <tbody>
            <tr>
              <td colSpan={5} className={own.fold}>
                <button
                  type="button"
                  className={own.foldButton}
                  onClick={() => setShowFew(!showFew)}
                  aria-expanded={showFew}
                  data-role="few-calls-toggle"
                >
                  {`${showFew ? '▾' : '▸'} ${few.length} row${few.length === 1 ? '' : 's'} with too few calls (under ${model.minCalls.toLocaleString('en-US')} on a side)`}
                </button>
              </td>
            </tr>
          </tbody>
        )}
        {showFew && few.map(renderRow)}
      </table>
      </div>
      {model.unlabelled.length > 0 && (
        <p className={styles.note}>{`Left out series of ${model.unlabelled.join(', ')} without an operation label.`}</p>
      )}
    </>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  fold: css({ padding: theme.spacing(0.5, 1) }),
  foldButton: css({
    background: 'none',
    border: 'none',
    padding: 0,
    cursor: 'pointer',
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
    '&:hover': { color: theme.colors.text.primary },
  }),
  sub: css({
    display: 'block',
    color: theme.colors.text.secondary,
    fontWeight: theme.typography.fontWeightRegular,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
});
