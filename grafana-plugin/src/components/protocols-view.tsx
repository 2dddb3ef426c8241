import React, { useMemo } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import { InterpolateFunction } from '@grafana/data';
import { displayValue, fieldConfigs, thresholdColor } from '../model/field-display';
import { Units, formatDelta, formatValue } from '../model/format';
import { protocolVerdictText } from '../model/headline-text';
import { metricDef } from '../model/metric-catalog';
import { operationLinks } from '../model/operation-links';
import { buildProtocolMatrix } from '../model/protocols';
import { protocolHeadline } from '../model/protocols-headline';
import { reduce, SeriesByRefId } from '../model/series';
import { buildTranscoded, TranscodedColumn } from '../model/transcoded';
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
  const transcoded = useMemo(
    () =>
      buildTranscoded(series, options.reducer, (operation) => {
        const rest = series.get('rate')?.find((s) => s.labels.operation === operation && s.labels.protocol === 'rest');
        return rest ? reduce(rest.values, options.reducer) : null;
      }),
    [series, options.reducer]
  );
  // Beside the REST column, whose calls it is a part of; last when there is no REST column.
  const transcodedAfter = matrix.protocols.includes('rest') ? 'rest' : matrix.protocols[matrix.protocols.length - 1];
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
              <React.Fragment key={p}>
                <th scope="col" data-protocol={p}>
                  {protocolLabel(p)}
                  {p === matrix.baseline && <span className={styles.baselineTag}>baseline</span>}
                </th>
                {transcoded && p === transcodedAfter && <TranscodedHeader column={transcoded} units={units} className={own.sub} />}
              </React.Fragment>
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
                    <React.Fragment key={cell.protocol}>
                      <td
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
                      {transcoded && i === 0 && cell.protocol === transcodedAfter && (
                        <TranscodedCellView column={transcoded} operation={op.operation} rows={op.rows.length} units={units} className={own.sub} />
                      )}
                    </React.Fragment>
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

const TRANSCODED_TITLE =
  'REST calls served through the sidecar\'s JSON transcoder (--transcode, --split). They keep protocol="rest", so their ' +
  'latency and errors are part of the REST column; this column counts them (rpcscope_translated_calls_total) and ' +
  'shows the time spent translating (rpcscope_translation_seconds, over every operation).';

function TranscodedHeader({ column, units, className }: { column: TranscodedColumn; units: Units; className: string }) {
  const times = [
    column.translationP50 !== null ? `p50 ${formatValue(column.translationP50, 'latency', units)}` : '',
    column.translationP99 !== null ? `p99 ${formatValue(column.translationP99, 'latency', units)}` : '',
  ].filter(Boolean);
  return (
    <th scope="col" data-column="transcoded" title={TRANSCODED_TITLE}>
      {'REST \u2192 gRPC (transcoded)'}
      {times.length > 0 && (
        <div className={className} data-role="translation-time">
          {`translation ${times.join(', ')}`}
        </div>
      )}
    </th>
  );
}

function TranscodedCellView({
  column,
  operation,
  rows,
  units,
  className,
}: {
  column: TranscodedColumn;
  operation: string;
  rows: number;
  units: Units;
  className: string;
}) {
  const cell = column.byOperation.get(operation);
  return (
    <td rowSpan={rows} data-column="transcoded" data-operation={operation} title={TRANSCODED_TITLE}>
      <div data-role="transcoded-rate">{formatValue(cell?.rate ?? null, 'rate', units)}</div>
      {cell?.share !== null && cell?.share !== undefined && (
        <div className={className} data-role="transcoded-share">
          {`${formatValue(cell.share, 'ratio', units)} of REST`}
        </div>
      )}
    </td>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  cell: css({ minWidth: 96 }),
  sub: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize, fontWeight: 'normal' }),
  line: css({ display: 'flex', alignItems: 'baseline', flexWrap: 'wrap', columnGap: theme.spacing(0.5) }),
});
