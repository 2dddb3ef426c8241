import { Http2ServerResponse } from 'node:http2';
import type { HttpResponse } from './h2c-listener.ts';

export function sendJson(res: HttpResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}

/** A bounded integer query parameter: `fallback` when absent or not a number. */
export function intParam(params: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const raw = params.get(name);
  const value = raw === null || raw.trim() === '' ? NaN : Number(raw);
  if (!Number.isFinite(value)) return fallback;
  return Math.min(max, Math.max(min, Math.trunc(value)));
}

/** write() on either response kind: their overloads differ, so TypeScript cannot call it on the union. */
export function writeChunk(res: HttpResponse, chunk: string | Uint8Array): boolean {
  return res instanceof Http2ServerResponse ? res.write(chunk) : res.write(chunk);
}
