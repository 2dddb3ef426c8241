// Small real clients for tests: node:http and node:http2 requests whose bodies
// are hashed as they stream, so large bodies are checked without holding them.
import { createHash } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import type { Readable } from 'node:stream';

export interface Fetched {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: number;
  sha256: string;
  text: string;
  trailers: Record<string, string | string[] | undefined>;
}

async function drain(body: Readable, keepText: boolean): Promise<{ bytes: number; sha256: string; text: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  let text = '';
  for await (const chunk of body as AsyncIterable<Buffer>) {
    hash.update(chunk);
    bytes += chunk.length;
    if (keepText && text.length < 64 * 1024) text += chunk.toString('utf8');
  }
  return { bytes, sha256: hash.digest('hex'), text };
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** One HTTP/1.1 request; `body` is written in 64 KiB chunks with backpressure. */
export function h1Request(url: string, opts: { method?: string; headers?: Record<string, string>; body?: Buffer } = {}): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      drain(res, true).then((d) => resolve({ status: res.statusCode!, headers: res.headers, trailers: res.trailers, ...d }), reject);
    });
    req.on('error', reject);
    writeBody(req, opts.body);
  });
}

/** One HTTP/2 request on a session of its own (h2c with prior knowledge, or TLS). */
export function h2Request(origin: string, path: string, opts: { method?: string; headers?: Record<string, string>; body?: Buffer; connect?: http2.SecureClientSessionOptions } = {}): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(origin, opts.connect);
    session.on('error', reject);
    const req = session.request({ ':method': opts.method ?? 'GET', ':path': path, ...opts.headers }, { endStream: !opts.body });
    let trailers: Fetched['trailers'] = {};
    req.on('trailers', (t) => (trailers = t));
    req.on('error', reject);
    req.on('response', (headers) => {
      drain(req, true).then(
        (d) => {
          session.close();
          resolve({ status: Number(headers[':status']), headers, trailers, ...d });
        },
        reject,
      );
    });
    writeBody(req, opts.body);
  });
}

function writeBody(req: NodeJS.WritableStream & { end(): void }, body: Buffer | undefined): void {
  if (!body) {
    req.end();
    return;
  }
  let i = 0;
  const step = 64 * 1024;
  const pump = (): void => {
    while (i < body.length) {
      const ok = req.write(body.subarray(i, i + step));
      i += step;
      if (!ok) {
        req.once('drain', pump);
        return;
      }
    }
    req.end();
  };
  pump();
}
