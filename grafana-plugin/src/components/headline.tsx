import React from 'react';
import { css, cx } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';
import { Verdict } from '../model/delta';

interface Props {
  /** The one big figure ("−61 %"); null when nothing passes the thresholds. */
  figure: string | null;
  verdict: Verdict;
  /** What the figure is, in small print beside it. */
  caption: string;
  /** The sentences: the first is the answer, set in bold; the rest follow. */
  lines: Array<{ text: string; role: string }>;
  /** A quieter last line: what is left out, and where it is. */
  aside?: React.ReactNode;
}

/** The pods mode's header shape for every mode: a coloured figure, its caption, the sentences. */
export function Headline({ figure, verdict, caption, lines, aside }: Props) {
  const styles = useStyles2(getStyles);
  return (
    <div className={styles.header} data-role="headline">
      {figure !== null && (
        <div className={cx(styles.figureBox, styles[verdict])} data-role="headline-figure" data-verdict={verdict}>
          <span className={styles.figure}>{figure}</span>
          <span className={styles.caption}>{caption}</span>
        </div>
      )}
      <div className={styles.sentences}>
        {lines.map((line, i) => (
          <div key={i} className={cx(i === 0 && styles.lead)} data-role={line.role}>
            {line.text}
          </div>
        ))}
        {aside && <div className={styles.aside}>{aside}</div>}
      </div>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  header: css({
    display: 'flex',
    flexWrap: 'wrap',
    alignItems: 'center',
    gap: theme.spacing(1, 2),
    padding: theme.spacing(0, 0, 1, 0),
    flex: '0 0 auto',
  }),
  figureBox: css({ display: 'flex', alignItems: 'baseline', gap: theme.spacing(1) }),
  figure: css({
    fontSize: theme.typography.h1.fontSize,
    fontWeight: theme.typography.fontWeightMedium,
    lineHeight: 1,
    whiteSpace: 'nowrap',
    fontVariantNumeric: 'tabular-nums',
  }),
  caption: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize, maxWidth: 220 }),
  better: css({ color: theme.colors.success.text }),
  worse: css({ color: theme.colors.error.text }),
  same: css({ color: theme.colors.text.secondary }),
  neutral: css({ color: theme.colors.text.primary }),
  sentences: css({
    color: theme.colors.text.primary,
    display: 'flex',
    flexDirection: 'column',
    gap: theme.spacing(0.25),
    flex: '1 1 320px',
    minWidth: 0,
  }),
  lead: css({ fontWeight: theme.typography.fontWeightMedium }),
  aside: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
});
