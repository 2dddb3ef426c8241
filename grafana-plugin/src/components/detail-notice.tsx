import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';
import { DetailNotice } from '../model/detail-level';

/** One line per query that reads a metric the sidecars' detail level does not export. */
export function DetailNotices({ notices }: { notices: DetailNotice[] }) {
  const styles = useStyles2(getStyles);
  if (notices.length === 0) {
    return null;
  }
  return (
    <div className={styles.root} role="status" data-role="detail-notice">
      {notices.map((n) => (
        <div key={n.refId}>{n.message}</div>
      ))}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({
    flex: '0 0 auto',
    color: theme.colors.warning.text,
    fontSize: theme.typography.bodySmall.fontSize,
    marginBottom: theme.spacing(0.5),
  }),
});
