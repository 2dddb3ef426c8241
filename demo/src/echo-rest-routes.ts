// Plain REST routes of the echo server, each shaped for one thing the sidecar
// must observe: streamed bodies both ways, chosen statuses, slow answers,
// server-sent events.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { HttpRequest, HttpResponse } from './h2c-listener.ts';
import { deterministicBytes } from './echo-behaviour.ts';
import { intParam, sendJson, writeChunk, writeHead } from './http-json.ts';
import { sleep } from './sleep.ts';

/** Bounds that keep one demo request from tying a test machine up. */
const MAX_SLOW_MS = 60_000;
const MAX_BYTES = 1 << 30;
const MAX_EVENTS = 10_000;
const CHUNK = 16 * 1024;

const ECHO_ID = /^\/v1\/echo\/([^/]+)$/;
const STATUS = /^\/v1\/status\/(\d{3})$/;

/** Serves the request and returns true when it is one of these routes; false leaves it to the RPC handler. */
export function handleEchoRest(req: HttpRequest, res: HttpResponse, shutdown: AbortSignal): boolean {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const path = url.pathname;
  if (!path.startsWith('/v1/') || path === '/v1/ws') return false;
  const method = req.method ?? 'GET';
  const signal = callSignal(res, shutdown);

  let match: RegExpExecArray | null;
  if (method === 'GET' && (match = ECHO_ID.exec(path))) {
    sendJson(res, 200, { id: decodeURIComponent(match[1] ?? ''), query: Object.fromEntries(url.searchParams) });
  } else if (method === 'POST' && path === '/v1/echo') {
    writeHead(res, 200, { 'content-type': req.headers['content-type'] ?? 'application/octet-stream' });
    // Piped chunk by chunk: the sidecar's streaming (and its backpressure) is
    // what a test of this route observes, so nothing here may buffer the body.
    void pipeline(req, res).catch(() => res.destroy());
  } else if (method === 'POST' && path === '/v1/digest') {
    void digest(req, res);
  } else if (method === 'GET' && (match = STATUS.exec(path))) {
    sendStatus(res, Number(match[1]));
  } else if (method === 'GET' && path === '/v1/slow') {
    const ms = intParam(url.searchParams, 'ms', 1000, 0, MAX_SLOW_MS);
    sleep(ms, signal).then(
      () => sendJson(res, 200, { slept_ms: ms }),
      () => res.destroy(),
    );
  } else if (method === 'GET' && path === '/v1/bytes') {
    const n = intParam(url.searchParams, 'n', 1024, 0, MAX_BYTES);
    writeHead(res, 200, { 'content-type': 'application/octet-stream', 'content-length': String(n) });
    void pipeline(Readable.from(chunks(n)), res).catch(() => res.destroy());
  } else if (method === 'GET' && path === '/v1/events') {
    const n = intParam(url.searchParams, 'n', 3, 0, MAX_EVENTS);
    const intervalMs = intParam(url.searchParams, 'interval_ms', 100, 0, MAX_SLOW_MS);
    void events(res, n, intervalMs, signal);
  } else {
    sendJson(res, 404, { error: `no route for ${method} ${path}` });
  }
  return true;
}

/** Aborts when the caller goes away or the server closes, whichever comes first. */
function callSignal(res: HttpResponse, shutdown: AbortSignal): AbortSignal {
  const gone = new AbortController();
  res.once('close', () => gone.abort(new Error('response closed')));
  return AbortSignal.any([gone.signal, shutdown]);
}

async function digest(req: HttpRequest, res: HttpResponse): Promise<void> {
  const hash = createHash('sha256');
  let bytes = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      hash.update(chunk);
    }
  } catch {
    res.destroy();
    return;
  }
  sendJson(res, 200, { bytes, sha256: hash.digest('hex') });
}

function sendStatus(res: HttpResponse, status: number): void {
  if (status < 200 || status > 599) {
    sendJson(res, 400, { error: `status ${status} is outside 200..599` });
  } else if (status === 204 || status === 304) {
    // These statuses forbid a body (RFC 9110 §15.3.5, §15.4.5).
    writeHead(res, status);
    res.end();
  } else {
    sendJson(res, status, { status });
  }
}

function* chunks(n: number): Generator<Buffer> {
  for (let offset = 0; offset < n; offset += CHUNK) {
    yield deterministicBytes(Math.min(CHUNK, n - offset), offset);
  }
}

async function events(res: HttpResponse, n: number, intervalMs: number, signal: AbortSignal): Promise<void> {
  writeHead(res, 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  try {
    for (let i = 0; i < n; i++) {
      if (i > 0) await sleep(intervalMs, signal);
      writeChunk(res, `id: ${i}\nevent: tick\ndata: ${JSON.stringify({ index: i, n })}\n\n`);
    }
    res.end();
  } catch {
    res.destroy();
  }
}
