import React, { useMemo } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';
import { BeforeAfterRow, buildBeforeAfter } from '../model/before-after';
import { formatValue, Units } from '../model/format';
import { metricDef } from '../model/metric-catalog';
import { SeriesByRefId } from '../model/series';
import { protocolLabel } from '../options/build-options';
import { PanelOptions } from '../types';
import { DeltaText } from './delta-text';
import { getTableStyles } from './table-styles';

interface Props {
  series: SeriesByRefId;
  options: PanelOptions;
  rangeSeconds: number;
}

const calls = (n: number | null) => (n === null ? '–' : Math.round(n).toLocaleString('en-US'));

function protocols(row: BeforeAfterRow): string {
  const b = row.protocolBefore;
  const a = row.protocolAfter;
  if (b === a) {
    return b ? protocolLabel(b) : '';
  }
  return `${b === null ? 'none' : protocolLabel(b) || 'all'} → ${a === null ? 'none' : protocolLabel(a) || 'all'}`;
}

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

export function BeforeAfterView({ series, options, rangeSeconds }: Props) {
  const styles = useStyles2(getTableStyles);
  const own = useStyles2(getStyles);
  const model = useMemo(() => buildBeforeAfter(series, { ...options, rangeSeconds }), [series, options, rangeSeconds]);
  const units: Units = options;

  return (
    <>
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
        {model.rows.map((row) => {
          const key = `${row.operation}|${row.protocolBefore}|${row.protocolAfter}`;
          const warning = callsWarning(row, model.minCalls);
          return (
            <tbody
              key={key}
              data-operation={row.operation}
              data-protocol-before={row.protocolBefore ?? ''}
              data-protocol-after={row.protocolAfter ?? ''}
              data-low-calls={row.lowCalls ? 'true' : 'false'}
            >
              {row.metrics.map((m, i) => {
                const def = metricDef(m.metric);
                return (
                  <tr key={m.metric} data-metric={m.metric}>
                    {i === 0 && (
                      <th scope="rowgroup" rowSpan={row.metrics.length} className={styles.operation}>
                        {row.operation}
                        <span className={own.sub}>{protocols(row)}</span>
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
                    <td data-role="before">{formatValue(m.before, def.kind, units)}</td>
                    <td data-role="after">{formatValue(m.after, def.kind, units)}</td>
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
        })}
      </table>
      {model.unlabelled.length > 0 && (
        <p className={styles.note}>{`Left out series of ${model.unlabelled.join(', ')} without an operation label.`}</p>
      )}
    </>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  sub: css({
    display: 'block',
    color: theme.colors.text.secondary,
    fontWeight: theme.typography.fontWeightRegular,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
});
