import React, { useMemo } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import { formatValue, Units } from '../model/format';
import { metricDef } from '../model/metric-catalog';
import { buildProtocolMatrix } from '../model/protocols';
import { SeriesByRefId } from '../model/series';
import { protocolLabel } from '../options/build-options';
import { PanelOptions } from '../types';
import { CellSparkline } from './cell-sparkline';
import { DeltaText } from './delta-text';
import { getTableStyles } from './table-styles';

interface Props {
  series: SeriesByRefId;
  options: PanelOptions;
  width: number;
}

const LABEL_COLUMNS_PX = 300;
const SPARK_HEIGHT = 18;

export function ProtocolsView({ series, options, width }: Props) {
  const styles = useStyles2(getTableStyles);
  const own = useStyles2(getStyles);
  const theme = useTheme2();
  const matrix = useMemo(() => buildProtocolMatrix(series, options), [series, options]);
  const units: Units = options;
  const baseline = protocolLabel(matrix.baseline);
  const sparkWidth = Math.max(0, Math.min(160, Math.floor((width - LABEL_COLUMNS_PX) / Math.max(1, matrix.protocols.length)) - 16));
  const sparkColor = theme.visualization.getColorByName('blue');

  return (
    <>
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
        {matrix.operations.map((op) => (
          <tbody key={op.operation} data-operation={op.operation}>
            {op.rows.map((row, i) => {
              const def = metricDef(row.metric);
              return (
                <tr key={row.metric}>
                  {i === 0 && (
                    <th scope="rowgroup" rowSpan={op.rows.length} className={styles.operation}>
                      {op.operation}
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
                        <span className={styles.value}>{formatValue(cell.value, def.kind, units)}</span>
                        {cell.delta && (
                          <DeltaText
                            delta={cell.delta}
                            kind={def.kind}
                            units={units}
                            description={`${def.label} {delta} vs ${baseline}`}
                          />
                        )}
                      </div>
                      {options.showSparklines && cell.series && (
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
