// The demo's own small Prometheus: it scrapes every sidecar's /metrics once a
// second and keeps the history, so the terminal view and the summary can ask
// for increases, rates and quantiles over any window of the run. Counters are
// accumulated across restarts the way rate() treats a counter reset (a value
// lower than the last one counts from zero), since the demo restarts a sidecar
// mid-run.
import { parseExposition, sum, type Matchers } from './metrics-text.ts';

export interface HistoryTarget {
  /** Names the target across restarts: the pod name. */
  id: string;
  adminUrl(): string;
}

interface SeriesInfo {
  target: string;
  name: string;
  labels: Record<string, string>;
  counter: boolean;
}

interface Snapshot {
  atMs: number;
  /** Accumulated counter values and last gauge values, by series key. */
  values: Map<string, number>;
}

/**
 * A scrape of a busy sidecar on a loaded machine can take well over a second;
 * a scrape given up loses nothing (the next one reads the same counters), but
 * one given up just before a restart would, so the wait is generous.
 */
const SCRAPE_TIMEOUT_MS = 5000;
/** While a sidecar drains, how often its counts are read again, and how long one read may take. */
const DRAIN_POLL_MS = 20;
/** How long a hold may take to reach the sidecar before the stop goes ahead without it. */
const HOLD_WAIT_MS = 3000;
const FINAL_SCRAPE_TIMEOUT_MS = 2000;

/** Counters, and the parts of a histogram that only grow. */
const isCounter = (name: string): boolean => /(_total|_bucket|_count|_sum)$/.test(name);

function matches(info: SeriesInfo, name: string, where: Matchers): boolean {
  if (info.name !== name) return false;
  for (const [k, want] of Object.entries(where)) {
    const got = k === 'target' ? info.target : info.labels[k];
    if (got === undefined) return false;
    if (typeof want === 'string' ? got !== want : !want(got)) return false;
  }
  return true;
}

/** Prometheus's histogram_quantile over cumulative bucket counts (`le` ascending, +Inf last). */
export function bucketQuantile(q: number, buckets: ReadonlyArray<[number, number]>): number {
  const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, count] of sorted) {
    if (count >= rank) {
      if (le === Infinity) return prevLe;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / Math.max(count - prevCount, Number.MIN_VALUE);
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}

export class MetricsHistory {
  private readonly series = new Map<string, SeriesInfo>();
  private readonly raw = new Map<string, number>();
  private readonly accumulated = new Map<string, number>();
  private readonly snapshots: Snapshot[] = [];
  private queue: Promise<void> = Promise.resolve();
  /** Targets whose process is going: their final reading is taken, so they are not read until the next one runs. */
  private readonly retired = new Set<string>();

  constructor(private readonly targets: () => readonly HistoryTarget[]) {}

  /**
   * Scrapes every target now; a target that does not answer (restarting)
   * keeps its last values. Scrapes run one after another: two in flight at
   * once could land out of order and read as a counter reset.
   */
  scrape(): Promise<void> {
    return this.serial(async () => {
      const atMs = Date.now();
      const texts = await Promise.all(this.targets().filter((t) => !this.retired.has(t.id)).map(async (t) => ({ id: t.id, text: await this.fetchMetrics(t.adminUrl()) })));
      for (const got of texts) if (got.text !== undefined) this.ingest(got.id, got.text);
      this.snapshots.push({ atMs, values: new Map(this.accumulated) });
    });
  }

  /**
   * Takes one target's last counts exactly as its process goes. `hold` is a
   * call of the caller's own, open on the target and matching `held` in
   * rpcscope_calls_active, which keeps the drain (and the admin port) open:
   * once it is in flight, `stop` sends SIGTERM; the target is read again and
   * again while it drains until the hold is its only call left, which is then
   * the target's final reading; then `release` ends the hold, and the next
   * process is counted from zero, whatever its first values are. Should the
   * hold never show (or the drain time out), the last reading before the
   * admin port closed stands.
   */
  async retire(id: string, adminUrl: string, o: { held: Matchers; stop: () => void; release: () => void; exited: Promise<unknown> }): Promise<void> {
    /** One reading; with `final`, the target is retired in the same turn when only the hold is left. */
    const read = (final: boolean): Promise<{ active: number; held: number; retired: boolean } | undefined> =>
      this.serial(async () => {
        const atMs = Date.now();
        const text = await this.fetchMetrics(adminUrl, FINAL_SCRAPE_TIMEOUT_MS);
        if (text === undefined) return undefined;
        this.ingest(id, text);
        this.snapshots.push({ atMs, values: new Map(this.accumulated) });
        const samples = parseExposition(text);
        const active = sum(samples, 'rpcscope_calls_active');
        const held = sum(samples, 'rpcscope_calls_active', o.held);
        // Retired before the next scrape in the queue can run: nothing the hold's own end adds may be read as this target's.
        const retired = final && held > 0 && active === held;
        if (retired) this.retired.add(id);
        return { active, held, retired };
      });
    let gone = false;
    void o.exited.then(() => (gone = true));
    try {
      for (const until = Date.now() + HOLD_WAIT_MS; Date.now() < until; ) {
        if (((await read(false))?.held ?? 0) > 0) break;
        await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
      }
      o.stop();
      while (!gone) {
        if ((await read(true))?.retired) break;
        await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
      }
    } finally {
      o.release();
    }
    await this.serial(async () => void this.retired.add(id));
    await o.exited;
    await this.serial(async () => {
      for (const [key, info] of this.series) if (info.target === id) this.raw.delete(key);
      this.retired.delete(id);
    });
  }

  private serial<T>(job: () => Promise<T>): Promise<T> {
    const run = this.queue.then(job);
    this.queue = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  private async fetchMetrics(adminUrl: string, timeoutMs = SCRAPE_TIMEOUT_MS): Promise<string | undefined> {
    try {
      const res = await fetch(`${adminUrl}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
      return res.ok ? await res.text() : undefined;
    } catch {
      return undefined;
    }
  }

  private ingest(id: string, text: string): void {
    for (const s of parseExposition(text)) {
      const labelText = Object.entries(s.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      const key = `${id}|${s.name}|${labelText}`;
      let info = this.series.get(key);
      if (info === undefined) {
        info = { target: id, name: s.name, labels: s.labels, counter: isCounter(s.name) };
        this.series.set(key, info);
      }
      if (!info.counter) {
        this.accumulated.set(key, s.value);
        continue;
      }
      const last = this.raw.get(key);
      const increase = last === undefined ? s.value : s.value >= last ? s.value - last : s.value;
      this.raw.set(key, s.value);
      this.accumulated.set(key, (this.accumulated.get(key) ?? 0) + increase);
    }
  }

  /** The time of the newest scrape (epoch ms), or 0 before the first. */
  latestMs(): number {
    return this.snapshots.at(-1)?.atMs ?? 0;
  }

  /**
   * The snapshot taken nearest `atMs` (the first one when none is earlier).
   * The ticks scrape just after each whole second, so "at or before" would
   * read a window a second early.
   */
  private at(atMs: number): Snapshot | undefined {
    let found: Snapshot | undefined;
    for (const s of this.snapshots) {
      if (s.atMs > atMs) {
        if (found === undefined || s.atMs - atMs < atMs - found.atMs) found = s;
        break;
      }
      found = s;
    }
    return found;
  }

  /**
   * The times of the two readings `increase` takes for [from, to] (the start
   * 0 when `from` is before the first): a count to compare with ours must be
   * taken over this span, not the asked one, which the readings straddle.
   */
  spanOf(fromMs: number, toMs: number): [number, number] {
    const start = fromMs < (this.snapshots[0]?.atMs ?? 0) ? 0 : (this.at(fromMs)?.atMs ?? 0);
    return [start, this.at(toMs)?.atMs ?? 0];
  }

  /**
   * `sum by (by) (increase(name{where}[from, to]))`, keyed by the `by` label
   * values joined with ` | ` (the label `target` is the scraped target's id).
   * A `from` before the first scrape counts from zero.
   */
  increase(name: string, where: Matchers, fromMs: number, toMs: number, by: readonly string[] = []): Record<string, number> {
    const end = this.at(toMs);
    const start = fromMs < (this.snapshots[0]?.atMs ?? 0) ? undefined : this.at(fromMs);
    const out: Record<string, number> = {};
    if (end === undefined) return out;
    for (const [key, info] of this.series) {
      if (!matches(info, name, where)) continue;
      const v = (end.values.get(key) ?? 0) - (start?.values.get(key) ?? 0);
      const k = by.map((l) => (l === 'target' ? info.target : (info.labels[l] ?? ''))).join(' | ');
      out[k] = (out[k] ?? 0) + v;
    }
    return out;
  }

  /** The whole increase as one number. */
  total(name: string, where: Matchers, fromMs: number, toMs: number): number {
    return this.increase(name, where, fromMs, toMs)[''] ?? 0;
  }

  /** The newest value of a gauge, summed by `by`. */
  gauge(name: string, where: Matchers = {}, by: readonly string[] = []): Record<string, number> {
    const last = this.snapshots.at(-1);
    const out: Record<string, number> = {};
    if (last === undefined) return out;
    for (const [key, info] of this.series) {
      if (!matches(info, name, where) || !last.values.has(key)) continue;
      const k = by.map((l) => (l === 'target' ? info.target : (info.labels[l] ?? ''))).join(' | ');
      out[k] = (out[k] ?? 0) + last.values.get(key)!;
    }
    return out;
  }

  /** histogram_quantile(q, sum by (by, le) (increase(name_bucket{where}[from, to]))). */
  quantile(q: number, name: string, where: Matchers, fromMs: number, toMs: number, by: readonly string[] = []): Record<string, number> {
    const buckets = this.increase(`${name}_bucket`, where, fromMs, toMs, [...by, 'le']);
    const groups = new Map<string, Array<[number, number]>>();
    for (const [key, count] of Object.entries(buckets)) {
      const parts = key.split(' | ');
      const leText = parts.pop() ?? '';
      const le = leText === '+Inf' ? Infinity : Number(leText);
      const group = parts.join(' | ');
      const list = groups.get(group) ?? [];
      list.push([le, count]);
      groups.set(group, list);
    }
    const out: Record<string, number> = {};
    for (const [group, list] of groups) out[group] = bucketQuantile(q, list);
    return out;
  }
}
