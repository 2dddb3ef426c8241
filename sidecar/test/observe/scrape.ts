// Scrapes an observer the way Prometheus does: over HTTP, from a real server.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsObserver } from '../../src/observe/metrics-observer.ts';

/** The body /metrics serves; `accept` as a scraper would send it (Prometheus text when absent). */
export async function scrape(observer: MetricsObserver, accept?: string): Promise<string> {
  const server = createServer((req, res) => observer.handleMetrics(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, accept === undefined ? undefined : { headers: { accept } });
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    return await res.text();
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** The bytes /metrics serves, for a binary format (the protobuf exposition); `accept` as a scraper would send it. */
export async function scrapeBytes(observer: MetricsObserver, accept: string): Promise<{ contentType: string | null; body: Buffer }> {
  const server = createServer((req, res) => observer.handleMetrics(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { accept } });
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    const body = Buffer.from(await res.arrayBuffer());
    if (Number(res.headers.get('content-length')) !== body.length) throw new Error('content-length is not the body\'s');
    return { contentType: res.headers.get('content-type'), body };
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** The sample lines of the contract's metrics (and target_info), without HELP/TYPE and process metrics. */
export function contractSamples(text: string): string[] {
  return text.split('\n').filter((l) => l.startsWith('rpcscope_') || l.startsWith('target_info'));
}
