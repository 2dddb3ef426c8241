// Backpressure: a body far larger than any buffer passes through the real
// `sidecar/bin/rpcscope` between a fast side and a slow one — an upload to an
// upstream that reads slowly, a download to a client that reads slowly — over
// HTTP/2 and over HTTP/1.1. Each transfer must arrive whole and in order (every
// byte checked, not only counted), and the sidecar must hold only what flow
// control lets through: its peak RSS with a 1 GiB body stays within a margin of
// its peak with 128 MiB. A sidecar that buffered instead would grow by the body.
//
// The large size is RPCSCOPE_BACKPRESSURE_MIB, 256 by default so that CI stays
// quick on a shared machine; test/reliability/report.ts runs it with 1024 (1 GiB).
// "Slow" is a reader paced at RPCSCOPE_BACKPRESSURE_MBPS (default 100 MB/s) that
// also stops reading for 500 ms after every 64 MiB: however fast or slow the
// machine relays, the slow side holds the transfer back again and again, and the
// sidecar must hold the fast side back in turn rather than buffer.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import { MB, peakRssBytes, rssSampler } from '../support/process-stats.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const MIB = 1024 * 1024;
const LARGE = Number(process.env.RPCSCOPE_BACKPRESSURE_MIB ?? 256) * MIB;
const SMALL = 128 * MIB;
const RATE = Number(process.env.RPCSCOPE_BACKPRESSURE_MBPS ?? 100) * 1e6;
const STALL_EVERY = 64 * MIB;
const STALL_MS = 500;
/** How much more the sidecar may hold at the large size than at the small one; buffering the body would exceed it by far. */
const MARGIN = 64 * MB;

/**
 * The body: 64 KiB chunks, each its index (8 bytes, big-endian) then a fixed
 * pattern, so a receiver checks every byte at its offset as it arrives — a
 * dropped, repeated or reordered chunk shows — without hashing a gigabyte.
 */
const CHUNK = 64 * 1024;
const TEMPLATE = Buffer.from(Array.from({ length: CHUNK }, (_, i) => (i * 31 + 7) & 0xff));

function* body(size: number): Generator<Buffer> {
  for (let i = 0; i * CHUNK < size; i++) {
    const chunk = Buffer.from(TEMPLATE.subarray(0, Math.min(CHUNK, size - i * CHUNK)));
    chunk.writeBigUInt64BE(BigInt(i), 0);
    yield chunk;
  }
}

/** Checks a body piece by piece against what `body` sent at each offset. */
class BodyCheck {
  bytes = 0;
  firstWrong: number | undefined;

  update(piece: Buffer): void {
    let at = 0;
    while (at < piece.length && this.firstWrong === undefined) {
      const index = Math.floor(this.bytes / CHUNK);
      const inChunk = this.bytes % CHUNK;
      const n = Math.min(piece.length - at, CHUNK - inChunk);
      const seg = piece.subarray(at, at + n);
      for (let k = inChunk; k < Math.min(8, inChunk + n); k++) {
        if (seg[k - inChunk] !== Math.floor(index / 2 ** (8 * (7 - k))) % 256) this.firstWrong = this.bytes + k - inChunk;
      }
      const from = Math.max(8, inChunk);
      if (from < inChunk + n && !seg.subarray(from - inChunk).equals(TEMPLATE.subarray(from, inChunk + n))) this.firstWrong ??= this.bytes;
      this.bytes += n;
      at += n;
    }
    if (at < piece.length) this.bytes += piece.length - at;
  }
}

/** Reads `stream` no faster than RATE, with a stall after every STALL_EVERY bytes, pausing it whenever it is ahead: its sender meets flow control. */
function pacedRead(stream: Readable): Promise<BodyCheck> {
  const check = new BodyCheck();
  const started = performance.now();
  return new Promise((resolve, reject) => {
    stream.on('data', (piece: Buffer) => {
      check.update(piece);
      const stalls = Math.floor(check.bytes / STALL_EVERY) * STALL_MS;
      const aheadMs = (check.bytes / RATE) * 1000 + stalls - (performance.now() - started);
      if (aheadMs > 1) {
        stream.pause();
        setTimeout(() => stream.resume(), aheadMs);
      }
    });
    stream.once('end', () => resolve(check));
    stream.once('error', reject);
  });
}

/** POST /upload is read slowly and answered with what arrived; GET /download?bytes=N is sent as fast as the peer takes it. */
function answerUpload(req: Readable, respond: (json: string) => void): void {
  pacedRead(req).then(
    (check) => respond(JSON.stringify({ bytes: check.bytes, firstWrong: check.firstWrong ?? null })),
    () => {},
  );
}

async function listen(server: http.Server | http2.Http2Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function h2Upstream(): http2.Http2Server {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    if (headers[':method'] === 'POST') {
      answerUpload(stream, (json) => {
        stream.respond({ ':status': 200, 'content-type': 'application/json' });
        stream.end(json);
      });
      return;
    }
    const size = Number(new URL(headers[':path']!, 'http://x').searchParams.get('bytes'));
    stream.respond({ ':status': 200, 'content-type': 'application/octet-stream', 'content-length': String(size) });
    void pipeline(Readable.from(body(size)), stream).catch(() => stream.destroy());
  });
  return server;
}

function h1Upstream(): http.Server {
  const server = http.createServer({ requestTimeout: 0 }, (req, res) => {
    if (req.method === 'POST') {
      answerUpload(req, (json) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(json);
      });
      return;
    }
    const size = Number(new URL(req.url!, 'http://x').searchParams.get('bytes'));
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
    void pipeline(Readable.from(body(size)), res).catch(() => res.destroy());
  });
  return server;
}

type Version = 'HTTP/2' | 'HTTP/1.1';
interface Transfer {
  bytes: number;
  firstWrong: number | null;
  status: number;
}

async function upload(version: Version, url: string, size: number): Promise<Transfer> {
  const send = async (sink: Writable, answer: Promise<{ status: number; text: string }>): Promise<Transfer> => {
    await pipeline(Readable.from(body(size)), sink);
    const { status, text } = await answer;
    return { status, ...(JSON.parse(text) as { bytes: number; firstWrong: number | null }) };
  };
  if (version === 'HTTP/2') {
    const session = http2.connect(url);
    try {
      const stream = session.request({ ':method': 'POST', ':path': '/upload', 'content-type': 'application/octet-stream' });
      const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
        let status = 0;
        let text = '';
        stream.on('response', (h) => (status = Number(h[':status'])));
        stream.setEncoding('utf8');
        stream.on('data', (d: string) => (text += d));
        stream.on('end', () => resolve({ status, text }));
        stream.on('error', reject);
      });
      return await send(stream, answer);
    } finally {
      session.close();
    }
  }
  const agent = new http.Agent({ keepAlive: false });
  const req = http.request(`${url}/upload`, { method: 'POST', agent, headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) } });
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
  });
  return send(req, answer);
}

async function download(version: Version, url: string, size: number): Promise<Transfer> {
  if (version === 'HTTP/2') {
    const session = http2.connect(url);
    try {
      const stream = session.request({ ':path': `/download?bytes=${size}` });
      const status = new Promise<number>((resolve) => stream.once('response', (h) => resolve(Number(h[':status']))));
      const check = await pacedRead(stream);
      return { status: await status, bytes: check.bytes, firstWrong: check.firstWrong ?? null };
    } finally {
      session.close();
    }
  }
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => http.get(`${url}/download?bytes=${size}`, { agent: false }, resolve).on('error', reject));
  const check = await pacedRead(res);
  return { status: res.statusCode!, bytes: check.bytes, firstWrong: check.firstWrong ?? null };
}

describe('rpcscope binary relaying bodies far larger than memory to and from slow peers', { timeout: 1_800_000 }, () => {
  const upstreams = { 'HTTP/2': h2Upstream(), 'HTTP/1.1': h1Upstream() };
  const urls: Partial<Record<Version, string>> = {};
  /** The sidecar's peak RSS (VmHWM) per HTTP version and body size. */
  const peaks: Record<string, number> = {};
  before(async () => {
    urls['HTTP/2'] = await listen(upstreams['HTTP/2']);
    urls['HTTP/1.1'] = await listen(upstreams['HTTP/1.1']);
  });
  after(() => {
    upstreams['HTTP/2'].close();
    upstreams['HTTP/1.1'].close();
  });

  for (const version of ['HTTP/2', 'HTTP/1.1'] as const) {
    for (const size of [SMALL, LARGE]) {
      const sizeText = size >= 1024 * MIB ? `${size / (1024 * MIB)} GiB` : `${size / MIB} MiB`;
      it(`${version}: a ${sizeText} upload to a slow upstream and a ${sizeText} download to a slow client arrive whole`, async () => {
        // A fresh sidecar per size: VmHWM is the peak of a process's whole life.
        const sc: SidecarProcess = await startSidecarProcess(['--upstream', urls[version]!, '--upstream-protocol', version === 'HTTP/2' ? 'http2' : 'http1']);
        try {
          const pid = sc.proc.pid!;
          for (const [what, run] of [
            ['upload to a slow upstream', upload],
            ['download to a slow client', download],
          ] as const) {
            const rss = rssSampler(pid);
            const t0 = performance.now();
            const got = await run(version, sc.url, size);
            const seconds = (performance.now() - t0) / 1000;
            const peak = rss.stop();
            const scenario = `${sizeText} ${what} over ${version}`;
            reportFigure({ section: 'load', scenario, name: 'sidecar peak RSS', value: Math.round(peak / MB), unit: 'MB' });
            reportFigure({ section: 'load', scenario, name: 'throughput', value: Math.round(size / 1e6 / seconds), unit: 'MB/s' });
            assert.deepEqual(got, { status: 200, bytes: size, firstWrong: null }, `${scenario}: every byte arrives, in order`);
          }
          assert.equal(sc.proc.exitCode, null, 'rpcscope is alive');
          peaks[`${version} ${size}`] = peakRssBytes(pid);
          reportFigure({ section: 'load', scenario: `${sizeText} bodies over ${version} (upload and download)`, name: 'sidecar peak RSS (VmHWM)', value: Math.round(peaks[`${version} ${size}`]! / MB), unit: 'MB' });
        } finally {
          await sc.stop();
        }
      });
    }
    it(`${version}: the sidecar's peak RSS does not grow with the body size`, () => {
      const small = peaks[`${version} ${SMALL}`];
      const large = peaks[`${version} ${LARGE}`];
      assert.ok(small !== undefined && large !== undefined, 'both sizes were relayed');
      reportFigure({ section: 'load', scenario: `peak RSS, ${LARGE / MIB} MiB bodies less 128 MiB bodies, over ${version}`, name: 'growth', value: Math.round((large - small) / MB), unit: 'MB' });
      assert.ok(large < small + MARGIN, `peak RSS ${Math.round(large / MB)} MB with ${LARGE / MIB} MiB bodies, ${Math.round(small / MB)} MB with 128 MiB`);
    });
  }
});
