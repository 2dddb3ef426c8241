import type { OutgoingHttpHeaders } from 'node:http';
import { Http2ServerResponse } from 'node:http2';
import type { HttpResponse } from './h2c-listener.ts';

/** What HTTP/1.1's and HTTP/2's compatibility answers both take to start: Node's types give the two different overloads, so a call on their union does not typecheck. */
interface HeadWriter {
  writeHead(statusCode: number, headers?: OutgoingHttpHeaders): unknown;
}

/** Starts `res` with `status` and `headers`, over either HTTP version. */
export function writeHead(res: HttpResponse, status: number, headers?: OutgoingHttpHeaders): void {
  const head: HeadWriter = res;
  head.writeHead(status, headers);
}

export function sendJson(res: HttpResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  writeHead(res, status, {
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
