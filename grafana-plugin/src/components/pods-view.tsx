import React, { useMemo } from 'react';
import { css, cx } from '@emotion/css';
import { colorManipulator, dateTimeFormat, GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import { formatValue } from '../model/format';
import { buildPods, PodRow, PodsModel } from '../model/pods';
import { SeriesByRefId } from '../model/series';
import { PanelOptions } from '../types';

interface Props {
  series: SeriesByRefId;
  options: PanelOptions;
  width: number;
  timeZone: string;
}

/** Pods drawn in the over-time strip; the bars list them all. */
const STRIP_PODS = 20;
const LABEL_PX = 160;

const pct = (v: number | null) => (v === null ? '–' : `${(v * 100).toFixed(v < 0.1 ? 1 : 0)} %`);
const num = (v: number | null, digits = 1) =>
  v === null ? '–' : v >= 100 ? Math.round(v).toLocaleString('en-US') : String(Number(v.toFixed(digits)));

/** As precise as the strip's span calls for: seconds within an hour, the date beyond a day. */
/**
 * Fair share reads pale, a pod with three times its share full: the power curve keeps pods
 * under their share nearly blank so that the hot row is what the eye finds.
 */
function heatAlpha(share: number, fair: number): number {
  return Math.min(1, Math.max(0.04, 0.2 * Math.pow(share / fair, 1.5)));
}

function clock(ms: number, model: PodsModel, timeZone: string): string {
  const span = (model.stripTimes[model.stripTimes.length - 1] ?? ms) - (model.stripTimes[0] ?? ms);
  const format = span > 86_400_000 ? 'MM-DD HH:mm' : span > 3_600_000 ? 'HH:mm' : 'HH:mm:ss';
  return dateTimeFormat(ms, { timeZone, format });
}

function pinnedSentence(model: PodsModel, options: PanelOptions): string | null {
  const top = model.pods[0];
  if (!model.pinned || !top) {
    return null;
  }
  const over =
    top.connections === null
      ? ''
      : ` over ${num(top.connections, 0)} connection${Math.round(top.connections) === 1 ? '' : 's'}`;
  const rate = top.rate === null ? '' : ` (${formatValue(top.rate, 'rate', options)})`;
  return `Pinned: ${top.pod} takes ${pct(top.share)} of calls${rate}${over}`;
}

function sinceSentence(model: PodsModel, timeZone: string): string | null {
  if (model.skewSince === null) {
    return null;
  }
  const when = clock(model.skewSince, model, timeZone);
  return model.skewSinceBeforeRange
    ? `Skew ≥ ${model.threshold} for the whole range (since before ${when})`
    : `Skew ≥ ${model.threshold} since ${when}`;
}

export function PodsView({ series, options, width, timeZone }: Props) {
  const styles = useStyles2(getStyles);
  const theme = useTheme2();
  const model = useMemo(
    () => buildPods(series, { ...options, maxColumns: Math.max(12, Math.min(120, Math.floor((width - LABEL_PX) / 6))) }),
    [series, options, width]
  );
  const maxShare = Math.max(0, ...model.pods.map((p) => p.share ?? 0));
  const hot = theme.visualization.getColorByName('orange');
  const fair = model.pods.length > 0 ? 1 / model.pods.length : 1;
  const strip = model.pods.slice(0, STRIP_PODS);
  const sinceIndex = model.skewSince === null ? -1 : model.stripTimes.indexOf(model.skewSince);
  const pinned = pinnedSentence(model, options);
  const since = sinceSentence(model, timeZone);
  const cplHeader = model.callsPerConnectionDerived ? 'calls/s per conn' : 'calls/conn';

  return (
    <div className={styles.root}>
      <div className={styles.header}>
        <div className={cx(styles.skew, model.skewed ? styles.bad : styles.good)} data-role="skew">
          <span className={styles.skewFigure} data-role="skew-value">
            {model.skew === null ? '–' : model.skew.toFixed(2)}
          </span>
          <span className={styles.skewLabel}>
            {`skew (max / mean ${model.label} call rate), threshold ${model.threshold}`}
            {!model.skewFromQuery && ' · computed from the pods'}
          </span>
        </div>
        <div className={styles.sentences}>
          {pinned && (
            <div className={styles.pinnedSentence} data-role="pinned">
              {pinned}
            </div>
          )}
          {since && <div data-role="since">{since}</div>}
          {!model.skewed && model.skew !== null && <div>Calls are spread evenly enough.</div>}
        </div>
      </div>

      <table className={styles.bars}>
        <thead>
          <tr>
            <th scope="col">{model.label}</th>
            <th scope="col">share of calls</th>
            <th scope="col">calls</th>
            <th scope="col">connections</th>
            <th scope="col">{cplHeader}</th>
          </tr>
        </thead>
        <tbody>
          {model.pods.map((p) => (
            <PodBar key={p.pod} pod={p} maxShare={maxShare} fair={fair} options={options} />
          ))}
        </tbody>
      </table>

      {model.stripTimes.length > 1 && (
        <div className={styles.strip} data-role="strip">
          <div className={styles.stripTitle}>{`Share of calls over time (fair share ${pct(fair)})`}</div>
          {strip.map((p) => (
            <div key={p.pod} className={styles.stripRow} data-pod={p.pod}>
              <span className={cx(styles.stripLabel, p.pinned && styles.pinnedText)}>{p.pod}</span>
              <span className={styles.stripCells}>
                {p.heat.map((h, c) => (
                  <span
                    key={c}
                    className={cx(styles.heat, c === sinceIndex && styles.sinceMark)}
                    style={{ background: h === null ? 'transparent' : colorManipulator.alpha(hot, heatAlpha(h, fair)) }}
                    title={`${p.pod} ${clock(model.stripTimes[c]!, model, timeZone)}: ${pct(h)} of calls`}
                  />
                ))}
              </span>
            </div>
          ))}
          {model.pods.length > STRIP_PODS && (
            <div className={styles.stripAxis}>{`and ${model.pods.length - STRIP_PODS} more`}</div>
          )}
          <div className={styles.stripAxis}>
            <span>{clock(model.stripTimes[0]!, model, timeZone)}</span>
            <span>{clock(model.stripTimes[model.stripTimes.length - 1]!, model, timeZone)}</span>
          </div>
        </div>
      )}
      {model.unlabelled.length > 0 && (
        <p className={styles.note}>{`Left out ${model.unlabelled.join(', ')}: no ${model.label} label.`}</p>
      )}
    </div>
  );
}

function PodBar({ pod, maxShare, fair, options }: { pod: PodRow; maxShare: number; fair: number; options: PanelOptions }) {
  const styles = useStyles2(getStyles);
  const width = maxShare > 0 && pod.share !== null ? (pod.share / maxShare) * 100 : 0;
  const fairLeft = maxShare > 0 ? Math.min(100, (fair / maxShare) * 100) : 0;
  return (
    <tr className={cx(pod.pinned && styles.pinnedRow)} data-pod={pod.pod} data-pinned={pod.pinned ? 'true' : 'false'}>
      <th scope="row" className={cx(styles.podName, pod.pinned && styles.pinnedText)}>
        {pod.pod}
        {pod.pinned && <span className={styles.pinnedTag}>pinned</span>}
      </th>
      <td className={styles.barCell}>
        <span className={styles.track}>
          <span className={cx(styles.bar, pod.pinned && styles.barPinned)} style={{ width: `${width}%` }} />
          <span className={styles.fairMark} style={{ left: `${fairLeft}%` }} title="fair share" />
        </span>
        <span className={styles.barValue} data-role="share">
          {pct(pod.share)}
        </span>
      </td>
      <td data-role="rate">{pod.rate === null ? '–' : formatValue(pod.rate, 'rate', options)}</td>
      <td data-role="connections">{num(pod.connections, 0)}</td>
      <td data-role="calls-per-connection">{num(pod.callsPerConnection)}</td>
    </tr>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ display: 'flex', flexDirection: 'column', gap: theme.spacing(1.5), fontVariantNumeric: 'tabular-nums' }),
  header: css({ display: 'flex', flexWrap: 'wrap', alignItems: 'center', gap: theme.spacing(2) }),
  skew: css({ display: 'flex', alignItems: 'baseline', gap: theme.spacing(1) }),
  skewFigure: css({ fontSize: theme.typography.h1.fontSize, fontWeight: theme.typography.fontWeightMedium, lineHeight: 1 }),
  skewLabel: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize, maxWidth: 220 }),
  good: css({ color: theme.colors.success.text }),
  bad: css({ color: theme.colors.error.text }),
  sentences: css({ color: theme.colors.text.primary, display: 'flex', flexDirection: 'column', gap: theme.spacing(0.25) }),
  pinnedSentence: css({ fontWeight: theme.typography.fontWeightMedium }),
  bars: css({
    borderCollapse: 'collapse',
    width: '100%',
    'th, td': { padding: theme.spacing(0.25, 1), textAlign: 'left', borderBottom: `1px solid ${theme.colors.border.weak}` },
    'thead th': { color: theme.colors.text.secondary, fontWeight: theme.typography.fontWeightMedium },
  }),
  podName: css({ fontWeight: theme.typography.fontWeightRegular, whiteSpace: 'nowrap' }),
  pinnedRow: css({ background: colorManipulator.alpha(theme.colors.error.main, 0.12) }),
  pinnedText: css({ color: theme.colors.error.text, fontWeight: theme.typography.fontWeightBold }),
  pinnedTag: css({
    marginLeft: theme.spacing(1),
    padding: theme.spacing(0, 0.5),
    borderRadius: theme.shape.radius.default,
    background: theme.colors.error.main,
    color: theme.colors.error.contrastText,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  barCell: css({ width: '45%', minWidth: 120 }),
  track: css({
    position: 'relative',
    display: 'inline-block',
    width: 'calc(100% - 56px)',
    height: 12,
    verticalAlign: 'middle',
    background: theme.colors.background.secondary,
  }),
  bar: css({ position: 'absolute', left: 0, top: 0, bottom: 0, background: theme.colors.primary.main }),
  barPinned: css({ background: theme.colors.error.main }),
  fairMark: css({ position: 'absolute', top: -2, bottom: -2, width: 2, background: theme.colors.text.secondary }),
  barValue: css({ display: 'inline-block', width: 52, textAlign: 'right', marginLeft: 4 }),
  strip: css({ display: 'flex', flexDirection: 'column', gap: 2 }),
  stripTitle: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
  stripRow: css({ display: 'flex', alignItems: 'center', height: 14 }),
  stripLabel: css({
    width: LABEL_PX,
    flex: `0 0 ${LABEL_PX}px`,
    overflow: 'hidden',
    textOverflow: 'ellipsis',
    whiteSpace: 'nowrap',
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  stripCells: css({ display: 'flex', flex: 1, height: '100%', background: theme.colors.background.secondary }),
  heat: css({ flex: 1, height: '100%' }),
  sinceMark: css({ boxShadow: `inset 2px 0 0 ${theme.colors.error.text}` }),
  stripAxis: css({
    display: 'flex',
    justifyContent: 'space-between',
    marginLeft: LABEL_PX,
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
  }),
  note: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
});
