// Reading the sidecar's admin port as an operator's scraper would, for the
// reliability suites: parsed samples, a scrape timed by curl, and waiting for
// calls in flight to drain before counting.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseExposition, sum, type Sample } from './metrics-text.ts';

export async function scrape(adminUrl: string): Promise<Sample[]> {
  const res = await fetch(`${adminUrl}/metrics`);
  assert.equal(res.status, 200);
  return parseExposition(await res.text());
}

/**
 * One scrape by curl, which times it itself: a test's own event loop busy
 * driving thousands of calls would add its lag to a latency it measured.
 */
export async function timedScrape(adminUrl: string): Promise<{ ms: number; samples: Sample[] }> {
  const { stdout } = await promisify(execFile)('curl', ['-sS', '--fail', '--max-time', '60', '-w', '\n%{time_total}', `${adminUrl}/metrics`], { maxBuffer: 64 * 1024 * 1024 });
  const at = stdout.lastIndexOf('\n');
  return { ms: Number(stdout.slice(at + 1)) * 1000, samples: parseExposition(stdout.slice(0, at)) };
}

/** Polls until no call is in flight (the sidecar records a call's end just after its client sees it), at most 30 s; that scrape's samples. */
export async function settledScrape(adminUrl: string): Promise<Sample[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const samples = await scrape(adminUrl);
    if (sum(samples, 'rpcscope_calls_active') === 0 || Date.now() > deadline) return samples;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The nearest-rank percentile; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}
