import React, { useMemo } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import { InterpolateFunction } from '@grafana/data';
import { displayValue, fieldConfigs, thresholdColor } from '../model/field-display';
import { Units, formatDelta } from '../model/format';
import { protocolVerdictText } from '../model/headline-text';
import { metricDef } from '../model/metric-catalog';
import { operationLinks } from '../model/operation-links';
import { buildProtocolMatrix } from '../model/protocols';
import { protocolHeadline } from '../model/protocols-headline';
import { SeriesByRefId } from '../model/series';
import { orderRows } from '../model/table-order';
import { protocolLabel } from '../options/build-options';
import { PanelOptions } from '../types';
import { CellSparkline } from './cell-sparkline';
import { DeltaText } from './delta-text';
import { Headline } from './headline';
import { OperationName } from './operation-name';
import { getTableStyles } from './table-styles';

interface Props {
  series: SeriesByRefId;
  options: PanelOptions;
  width: number;
  rangeSeconds: number;
  replaceVariables: InterpolateFunction;
}

/** Verdicts spelled out in the headline; the rest are in the table's order. */
const HEADLINE_VERDICTS = 3;
/** Below this width sparklines leave the cells, which then fit two protocols side by side on a phone. */
const NARROW_PX = 640;

const LABEL_COLUMNS_PX = 300;
const SPARK_HEIGHT = 18;

export function ProtocolsView({ series, options, width, rangeSeconds, replaceVariables }: Props) {
  const styles = useStyles2(getTableStyles);
  const own = useStyles2(getStyles);
  const theme = useTheme2();
  const matrix = useMemo(() => buildProtocolMatrix(series, options), [series, options]);
  const headline = useMemo(() => protocolHeadline(matrix, series, { ...options, rangeSeconds }), [matrix, series, options, rangeSeconds]);
  const configs = useMemo(() => fieldConfigs(series), [series]);
  const units: Units = options;
  const baseline = protocolLabel(matrix.baseline);
  const rank = new Map(headline.verdicts.map((v, i) => [v.operation, i]));
  // The matrix comes busiest first, which is the 'calls' order and the tie-break of the others.
  const operations = orderRows(
    matrix.operations,
    options.sortBy,
    (o) => o.operation,
    (o) => rank.get(o.operation)
  );
  const showSparklines = options.showSparklines && width >= NARROW_PX;
  const top = headline.verdicts[0];
  const topChange = top?.changes[0];
  const topDef = topChange && metricDef(topChange.metric);
  const shown = headline.verdicts.slice(0, HEADLINE_VERDICTS);
  const more = headline.verdicts.length - shown.length;
  const aside = [
    more > 0 ? `${more} more operation${more === 1 ? '' : 's'} differ${more === 1 ? 's' : ''}: in the table below.` : '',
    headline.unchanged.length > 0 ? `Within the thresholds: ${headline.unchanged.join(', ')}.` : '',
    // A count, not the list: the pairs are in the table, and a list of them would push it away.
    headline.fewCalls.length > 0
      ? `${headline.fewCalls.length} operation/protocol pair${headline.fewCalls.length === 1 ? '' : 's'} under ${options.minCalls.toLocaleString('en-US')} calls left out.`
      : '',
  ]
    .filter(Boolean)
    .join(' ');
  const sparkWidth = Math.max(0, Math.min(160, Math.floor((width - LABEL_COLUMNS_PX) / Math.max(1, matrix.protocols.length)) - 16));
  const sparkColor = theme.visualization.getColorByName('blue');

  return (
    <>
      {matrix.hasBaseline && (
        <Headline
          figure={topChange && topDef ? formatDelta(topChange.delta, topDef.kind, units) : null}
          verdict={topChange?.delta.verdict ?? 'same'}
          caption={top && topDef ? `${topDef.label} of ${top.operation}, ${protocolLabel(top.protocol)} vs ${baseline}` : ''}
          lines={
            shown.length > 0
              ? shown.map((v) => ({ text: protocolVerdictText(v, units), role: 'verdict' }))
              : [
                  {
                    text: `No protocol differs from ${baseline} by ${options.relativeThreshold} % (ratios ${options.ratioThreshold} pp) on ${matrix.operations.length} operation${matrix.operations.length === 1 ? '' : 's'}.`,
                    role: 'verdict-none',
                  },
                ]
          }
          aside={aside || undefined}
        />
      )}
      <div className={styles.scroll} data-role="table-scroll">
      <table className={styles.table}>
        <caption className={styles.caption}>
          {matrix.hasBaseline
            ? `Change against ${baseline}: coloured where it passes ${options.relativeThreshold} % (ratios ${options.ratioThreshold} pp); ${options.reducer} over the range.`
            : `No ${baseline} series to compare with: choose another baseline protocol.`}
        </caption>
        <thead>
          <tr>
            <th scope="col">Operation</th>
            <th scope="col">Metric</th>
            {matrix.protocols.map((p) => (
              <th scope="col" key={p} data-protocol={p}>
                {protocolLabel(p)}
                {p === matrix.baseline && <span className={styles.baselineTag}>baseline</span>}
              </th>
            ))}
          </tr>
        </thead>
        {operations.map((op) => (
          <tbody key={op.operation} data-operation={op.operation}>
            {op.rows.map((row, i) => {
              const def = metricDef(row.metric);
              return (
                <tr key={row.metric}>
                  {i === 0 && (
                    <th scope="rowgroup" rowSpan={op.rows.length} className={styles.operation}>
                      <OperationName
                        operation={op.operation}
                        links={operationLinks(configs.values(), { operation: op.operation }, replaceVariables)}
                      />
                    </th>
                  )}
                  <th scope="row" className={styles.metric}>
                    {def.label}
                  </th>
                  {row.cells.map((cell) => (
                    <td
                      key={cell.protocol}
                      data-operation={op.operation}
                      data-protocol={cell.protocol}
                      data-metric={row.metric}
                      className={own.cell}
                    >
                      <div className={own.line}>
                        <span
                          className={styles.value}
                          style={{ color: thresholdColor(cell.value, configs.get(row.metric), theme) ?? undefined }}
                        >
                          {displayValue(cell.value, def.kind, units, configs.get(row.metric))}
                        </span>
                        {cell.delta && (
                          <DeltaText
                            delta={cell.delta}
                            kind={def.kind}
                            units={units}
                            description={`${def.label} {delta} vs ${baseline}`}
                          />
                        )}
                      </div>
                      {showSparklines && cell.series && (
                        <CellSparkline series={cell.series} width={sparkWidth} height={SPARK_HEIGHT} color={sparkColor} />
                      )}
                    </td>
                  ))}
                </tr>
              );
            })}
          </tbody>
        ))}
      </table>
      </div>
      {(matrix.unlabelled.length > 0 || matrix.duplicates.length > 0) && (
        <p className={styles.note}>
          {matrix.unlabelled.length > 0 &&
            `Left out series of ${matrix.unlabelled.join(', ')} without an operation or protocol label. `}
          {matrix.duplicates.length > 0 &&
            `Several series for ${matrix.duplicates.slice(0, 3).join('; ')}${matrix.duplicates.length > 3 ? '…' : ''}: aggregate by (operation, protocol).`}
        </p>
      )}
    </>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  cell: css({ minWidth: 96 }),
  line: css({ display: 'flex', alignItems: 'baseline', flexWrap: 'wrap', columnGap: theme.spacing(0.5) }),
});
