import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';
import { Diagnosis } from '../model/expectations';

/** Shown instead of a view: what the mode reads, what the queries gave, and queries to copy. */
export function MissingData({ diagnosis }: { diagnosis: Diagnosis }) {
  const styles = useStyles2(getStyles);
  const { expectation, problem, found } = diagnosis;
  const examples = expectation.queries.slice(0, 4);
  return (
    <div className={styles.root} role="status" data-role="missing-data">
      <div className={styles.problem}>{problem}</div>
      <p>{expectation.summary}</p>
      {found.length > 0 && (
        <p className={styles.found}>
          {'Found: '}
          {found.map((f, i) => (
            <span key={f.refId}>
              {i > 0 && '; '}
              <code>{f.refId}</code>
              {f.labels.length > 0 ? ` (labels ${f.labels.join(', ')})` : ' (no labels)'}
            </span>
          ))}
        </p>
      )}
      <div className={styles.exampleTitle}>{`Example ${examples.length > 1 ? 'queries' : 'query'}:`}</div>
      {examples.map((q) => (
        <div key={q.refId} className={styles.example}>
          <span className={styles.refId}>{q.refId}</span>
          <code className={styles.code}>{q.example}</code>
        </div>
      ))}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ color: theme.colors.text.primary, fontSize: theme.typography.body.fontSize, overflow: 'auto' }),
  problem: css({ color: theme.colors.warning.text, fontWeight: theme.typography.fontWeightMedium, marginBottom: theme.spacing(1) }),
  found: css({ color: theme.colors.text.secondary }),
  exampleTitle: css({ color: theme.colors.text.secondary, marginBottom: theme.spacing(0.5) }),
  example: css({ display: 'flex', gap: theme.spacing(1), marginBottom: theme.spacing(0.5), alignItems: 'baseline' }),
  refId: css({ flex: '0 0 auto', minWidth: 90, fontFamily: theme.typography.fontFamilyMonospace, color: theme.colors.text.secondary }),
  code: css({
    fontFamily: theme.typography.fontFamilyMonospace,
    fontSize: theme.typography.bodySmall.fontSize,
    background: theme.colors.background.secondary,
    padding: theme.spacing(0.25, 0.5),
    wordBreak: 'break-all',
  }),
});
