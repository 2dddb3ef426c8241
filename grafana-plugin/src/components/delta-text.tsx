import React from 'react';
import { css, cx } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';
import { Delta, Verdict } from '../model/delta';
import { formatDelta, Units } from '../model/format';
import { MetricKind } from '../model/metric-catalog';

interface Props {
  delta: Delta;
  kind: MetricKind;
  units: Units;
  /** "p99 … vs REST": read by screen readers and shown on hover. */
  description: string;
  muted?: boolean;
}

const WORDS: Record<Verdict, string> = { better: 'better', worse: 'worse', same: 'about the same', neutral: 'changed' };

export function DeltaText({ delta, kind, units, description, muted }: Props) {
  const styles = useStyles2(getStyles);
  const text = formatDelta(delta, kind, units);
  return (
    <span
      className={cx(styles.delta, styles[delta.verdict], muted && styles.muted)}
      data-verdict={delta.verdict}
      title={`${description.replace('{delta}', text)} (${WORDS[delta.verdict]})`}
    >
      {text}
    </span>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  delta: css({
    fontSize: theme.typography.bodySmall.fontSize,
    fontWeight: theme.typography.fontWeightMedium,
    whiteSpace: 'nowrap',
    fontVariantNumeric: 'tabular-nums',
  }),
  better: css({ color: theme.colors.success.text }),
  worse: css({ color: theme.colors.error.text }),
  same: css({ color: theme.colors.text.secondary }),
  neutral: css({ color: theme.colors.text.primary }),
  muted: css({ opacity: 0.55, textDecoration: 'underline dotted' }),
});
