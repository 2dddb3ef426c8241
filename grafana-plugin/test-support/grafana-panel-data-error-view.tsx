// What Grafana registers with setPanelDataErrorView when it starts (its
// public/app/features/panel/components/PanelDataErrorView.tsx), reduced to what a viewer of a
// dashboard sees: the message, else the panel's "No value" text, else "No data" when there are
// no series, centred in the panel's secondary text colour. Its edit-mode buttons (switch to
// table, suggestions) need Grafana's panel editor and are left out. @grafana/runtime's own
// default, used where nothing was registered, says "Unable to render data: …".
import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import type { PanelDataErrorViewProps } from '@grafana/runtime';
import { useStyles2 } from '@grafana/ui';

/** @grafana/e2e-selectors' components.Panels.Panel.PanelDataErrorMessage. */
export const PANEL_DATA_ERROR_MESSAGE = 'data-testid Panel data error message';

function messageFor({ data, fieldConfig, message }: PanelDataErrorViewProps): string {
  if (message) {
    return message;
  }
  if (!data.series || data.series.length === 0 || data.series.every((frame) => frame.length === 0)) {
    return fieldConfig?.defaults.noValue ?? 'No data';
  }
  return 'Cannot visualize data';
}

export function GrafanaPanelDataErrorView(props: PanelDataErrorViewProps) {
  const styles = useStyles2(getStyles);
  return (
    <div className={styles.wrapper}>
      <div className={styles.message} data-testid={PANEL_DATA_ERROR_MESSAGE}>
        {messageFor(props)}
      </div>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  wrapper: css({ display: 'flex', flexDirection: 'column', justifyContent: 'center', alignItems: 'center', height: '100%', width: '100%' }),
  message: css({ textAlign: 'center', color: theme.colors.text.secondary, fontSize: theme.typography.size.lg, width: '100%' }),
});
