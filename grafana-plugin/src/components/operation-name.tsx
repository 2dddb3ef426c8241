import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2 } from '@grafana/ui';
import { OperationLink } from '../model/operation-links';

/** An operation's name in its row, linked through the field config's data links (the first one). */
export function OperationName({ operation, links }: { operation: string; links: OperationLink[] }) {
  const styles = useStyles2(getStyles);
  const link = links[0];
  if (!link) {
    return <>{operation}</>;
  }
  return (
    <a
      className={styles.link}
      href={link.href}
      title={link.title}
      data-role="operation-link"
      target={link.targetBlank ? '_blank' : undefined}
      rel={link.targetBlank ? 'noopener noreferrer' : undefined}
    >
      {operation}
    </a>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  link: css({
    color: theme.colors.text.link,
    '&:hover': { textDecoration: 'underline' },
  }),
});
