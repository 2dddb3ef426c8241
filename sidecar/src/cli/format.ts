// Figures as the commands print them: shares in %, durations in ms or s,
// sizes in B, kB or MB, rates per second.

export function pct(ratio: number, digits = 1): string {
  return `${(ratio * 100).toFixed(digits)} %`;
}

export function ms(seconds: number): string {
  if (!Number.isFinite(seconds)) return '–';
  if (seconds >= 10) return `${seconds.toFixed(1)} s`;
  if (seconds >= 1) return `${seconds.toFixed(2)} s`;
  const m = seconds * 1000;
  return `${m >= 100 ? m.toFixed(0) : m >= 10 ? m.toFixed(1) : m.toFixed(2)} ms`;
}

export function bytes(n: number): string {
  if (!Number.isFinite(n)) return '–';
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kB`;
  return `${Math.round(n)} B`;
}

export function perSecond(n: number): string {
  return `${n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)}/s`;
}

/** A whole count with thousands separators. */
export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** `30m`, `1h30m`, `45s` of milliseconds. */
export function durationText(msTotal: number): string {
  let s = Math.round(msTotal / 1000);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${h > 0 ? `${h}h` : ''}${m > 0 ? `${m}m` : ''}${s > 0 || (h === 0 && m === 0) ? `${s}s` : ''}`;
}

/** Relative change as `+61 %` / `−25 %`. */
export function change(ratio: number): string {
  const p = Math.round(ratio * 100);
  return `${p >= 0 ? '+' : '\u2212'}${Math.abs(p)} %`;
}
