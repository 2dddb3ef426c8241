import React, { useMemo } from 'react';
import { FieldColorModeId, FieldSparkline, FieldType } from '@grafana/data';
import { Sparkline, useTheme2 } from '@grafana/ui';
import { Series } from '../model/series';

interface Props {
  series: Series;
  width: number;
  height: number;
  color: string;
}

/** The cell's series over the panel's range, on its own y scale: the shape, not the level. */
export function CellSparkline({ series, width, height, color }: Props) {
  const theme = useTheme2();
  const sparkline = useMemo((): FieldSparkline | null => {
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < series.values.length; i++) {
      const v = series.values[i];
      if (typeof v === 'number' && Number.isFinite(v)) {
        min = Math.min(min, v);
        max = Math.max(max, v);
      }
    }
    if (series.times.length < 2 || !Number.isFinite(min)) {
      return null;
    }
    return {
      x: { name: 'time', type: FieldType.time, values: Array.from(series.times), config: {} },
      y: {
        name: 'value',
        type: FieldType.number,
        values: Array.from(series.values, (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null)),
        config: {},
        // Sparkline reads the y range from the field's state, as the stat panel sets it.
        state: { range: { min, max, delta: max - min } },
      },
    };
  }, [series]);

  if (!sparkline || width < 8) {
    return null;
  }
  return (
    <Sparkline
      width={width}
      height={height}
      theme={theme}
      sparkline={sparkline}
      config={{
        color: { mode: FieldColorModeId.Fixed, fixedColor: color },
        custom: { lineWidth: 1, fillOpacity: 12 },
      }}
    />
  );
}
