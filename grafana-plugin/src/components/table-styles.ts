import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';

/** The matrix look shared by the protocols and before/after tables. */
export const getTableStyles = (theme: GrafanaTheme2) => ({
  /** The table scrolls under the headline, inside the panel, its header row kept in view. */
  scroll: css({ flex: '1 1 auto', minHeight: 0, overflow: 'auto' }),
  caption: css({
    captionSide: 'top',
    textAlign: 'left',
    padding: theme.spacing(0, 0, 1, 0),
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  table: css({
    borderCollapse: 'collapse',
    width: '100%',
    fontVariantNumeric: 'tabular-nums',
    'th, td': {
      padding: theme.spacing(0.5, 1),
      borderBottom: `1px solid ${theme.colors.border.weak}`,
      textAlign: 'left',
      verticalAlign: 'top',
    },
    'thead th': {
      position: 'sticky',
      top: 0,
      zIndex: 1,
      background: theme.colors.background.primary,
      color: theme.colors.text.secondary,
      fontWeight: theme.typography.fontWeightMedium,
      borderBottom: `1px solid ${theme.colors.border.medium}`,
    },
  }),
  operation: css({
    fontWeight: theme.typography.fontWeightMedium,
    color: theme.colors.text.primary,
    wordBreak: 'break-word',
    borderRight: `1px solid ${theme.colors.border.weak}`,
  }),
  metric: css({
    color: theme.colors.text.secondary,
    fontWeight: theme.typography.fontWeightRegular,
    whiteSpace: 'nowrap',
  }),
  value: css({
    color: theme.colors.text.primary,
    marginRight: theme.spacing(1),
    whiteSpace: 'nowrap',
  }),
  baselineTag: css({
    marginLeft: theme.spacing(0.5),
    padding: theme.spacing(0, 0.5),
    borderRadius: theme.shape.radius.default,
    background: theme.colors.background.secondary,
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  note: css({
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
    margin: theme.spacing(1, 0, 0, 0),
  }),
  warning: css({
    color: theme.colors.warning.text,
    fontSize: theme.typography.bodySmall.fontSize,
    fontWeight: theme.typography.fontWeightRegular,
    display: 'block',
  }),
});
