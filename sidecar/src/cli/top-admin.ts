// `top`'s figures from the sidecars themselves: each admin port's /metrics,
// scraped every interval; rates and quantiles are the difference between two
// scrapes, so the figures are those of the last interval.
import { bucketQuantile, podRows, type TopRow, type TopView } from './top-model.ts';
import { parseExposition, type ExpositionSample } from './exposition.ts';

interface Scrape {
  at: number;
  samples: ExpositionSample[];
}

const key = (...parts: string[]): string => parts.join('\u0000');

/** Sums `name` by the key `by` gives each sample's labels (samples `where` rejects left out). */
function sums(samples: readonly ExpositionSample[], name: string, by: (l: Record<string, string>) => string, where: (l: Record<string, string>) => boolean = () => true): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) if (s.name === name && where(s.labels)) out.set(by(s.labels), (out.get(by(s.labels)) ?? 0) + s.value);
  return out;
}

/** `now - before` per key; a counter that went down (a restarted sidecar) counts from 0. */
function delta(now: ReadonlyMap<string, number>, before: ReadonlyMap<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of now) {
    const b = before.get(k) ?? 0;
    out.set(k, v >= b ? v - b : v);
  }
  return out;
}

export class AdminSource {
  private readonly last = new Map<string, Scrape>();

  constructor(private readonly bases: readonly string[], private readonly direction: string | undefined) {}

  async read(): Promise<TopView> {
    const missing: string[] = [];
    const pairs: Array<{ base: string; now: Scrape; before: Scrape | undefined }> = [];
    await Promise.all(
      this.bases.map(async (base) => {
        try {
          const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(2000) });
          if (!res.ok) throw new Error(`HTTP ${res.status}`);
          const now = { at: Date.now(), samples: parseExposition(await res.text()) };
          pairs.push({ base, now, before: this.last.get(base) });
          this.last.set(base, now);
        } catch (err) {
          missing.push(`${base}: ${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message}`);
        }
      }),
    );
    const dir = (l: Record<string, string>): boolean => this.direction === undefined || l.direction === this.direction;
    const calls = new Map<string, number>();
    const rates = new Map<string, number>();
    const ok = new Map<string, number>();
    const respBytes = new Map<string, number>();
    const buckets = new Map<string, Map<number, number>>();
    const active = new Map<string, number>();
    const podRates = new Map<string, number>();
    const add = (m: Map<string, number>, d: ReadonlyMap<string, number>): void => {
      for (const [k, v] of d) m.set(k, (m.get(k) ?? 0) + v);
    };
    for (const { base, now, before } of pairs) {
      const methodOperation = new Map<string, string>();
      for (const s of now.samples) if (s.name === 'rpcscope_calls_total') methodOperation.set(key(s.labels.protocol ?? '', s.labels.method ?? ''), s.labels.operation ?? '');
      const opKey = (l: Record<string, string>): string => key(l.operation ?? '', l.protocol ?? '');
      for (const s of now.samples) {
        if (s.name === 'rpcscope_calls_active' && dir(s.labels)) {
          const k = key(methodOperation.get(key(s.labels.protocol ?? '', s.labels.method ?? '')) ?? s.labels.method ?? '', s.labels.protocol ?? '');
          active.set(k, (active.get(k) ?? 0) + s.value);
        }
      }
      if (before === undefined) continue;
      const seconds = Math.max((now.at - before.at) / 1000, 0.001);
      const d = (name: string, by: (l: Record<string, string>) => string, where: (l: Record<string, string>) => boolean): Map<string, number> => delta(sums(now.samples, name, by, where), sums(before.samples, name, by, where));
      const callsHere = d('rpcscope_calls_total', opKey, dir);
      add(calls, callsHere);
      // Each sidecar's calls over its own interval: the scrapes of one round are not taken at one instant.
      add(rates, new Map([...callsHere].map(([k, v]) => [k, v / seconds])));
      add(ok, d('rpcscope_calls_total', opKey, (l) => dir(l) && l.code === 'OK'));
      add(respBytes, d('rpcscope_call_bytes_total', opKey, (l) => dir(l) && l.flow === 'response'));
      for (const [k, v] of d('rpcscope_call_duration_seconds_bucket', (l) => key(opKey(l), l.le ?? ''), dir)) {
        const [operation, protocol, le] = k.split('\u0000') as [string, string, string];
        const b = buckets.get(key(operation, protocol)) ?? new Map<number, number>();
        const bound = le === '+Inf' ? Infinity : Number(le);
        b.set(bound, (b.get(bound) ?? 0) + v);
        buckets.set(key(operation, protocol), b);
      }
      const pod = now.samples.find((s) => s.name === 'target_info')?.labels.k8s_pod_name ?? base.replace(/^https?:\/\//u, '');
      const podCalls = [...d('rpcscope_calls_total', () => '', (l) => l.direction === 'inbound').values()].reduce((a, b) => a + b, 0);
      podRates.set(pod, (podRates.get(pod) ?? 0) + podCalls / seconds);
    }
    const keys = new Set([...calls.keys(), ...active.keys()]);
    const rows: TopRow[] = [...keys].map((k) => {
      const [operation, protocol] = k.split('\u0000') as [string, string];
      const n = calls.get(k) ?? 0;
      const b = buckets.get(k) ?? new Map<number, number>();
      return {
        operation,
        protocol,
        rate: rates.get(k) ?? NaN,
        success: n > 0 ? (ok.get(k) ?? 0) / n : NaN,
        p50: bucketQuantile(0.5, b),
        p99: bucketQuantile(0.99, b),
        active: active.get(k) ?? 0,
        bytesPerCall: n > 0 ? (respBytes.get(k) ?? 0) / n : NaN,
      };
    });
    return { rows, ...podRows(podRates), missing };
  }
}
