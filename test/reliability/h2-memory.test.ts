// One hostile HTTP/2 connection against the real `sidecar/bin/rpcscope` on the
// relay (the default data plane) must not make the sidecar hold hundreds of MiB,
// nor make the app do the work: each case writes the frames of one shape found by
// a security review over a raw socket, then checks what the client was told, what
// reached the app (counted by a TCP hop in front of it), the counters on
// /metrics, the sidecar's resident memory, and that a normal call still works.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startCountingHop, type CountingHop } from '../support/counting-hop.ts';
import { eventually, settled } from '../support/eventually.ts';
import { FLAG, FRAME, H2_ERROR, PREFACE, frame, goawayCodes, headerBlockFrames, indexedLiteral, literal, readFrames, requestBlock, resets, settings, type ReadFrame } from '../support/h2-frames.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';
import { MB, rssBytes, rssSampler } from '../support/process-stats.ts';
import { rawConnect, scrape, type RawClient } from '../support/raw-client.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

/** An app that never answers /hold (nor reads its body), answers anything else `ok`, and takes any header list. */
async function startApp(): Promise<{ server: http2.Http2Server; port: number; close(): void }> {
  // Node's own limits would end the connection first and hide the sidecar's: 10 MB of session memory, and
  // (Node 24) the rate of streams reset toward it, as the relay cancels toward the app each stream it refuses.
  const server = http2.createServer({ maxSessionMemory: 4096, maxHeaderListPairs: 1_000_000, streamResetBurst: 1_000_000, streamResetRate: 1_000_000 });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    if (headers[':path'] === '/hold') return void stream.pause();
    stream.respond({ ':status': 200 });
    stream.end('ok');
  });
  server.on('sessionError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, close: () => server.close() };
}

/** A raw HTTP/2 connection, set up: preface, SETTINGS, the server's SETTINGS acknowledged. */
async function h2Raw(port: number, own: [number, number][] = []): Promise<RawClient> {
  const c = await rawConnect(port);
  c.socket.write(Buffer.concat([PREFACE, settings(own)]));
  await Promise.race([new Promise((r) => c.socket.once('data', r)), c.closed]);
  c.socket.write(settings([], FLAG.ACK));
  return c;
}

async function write(c: RawClient, frames: Buffer[]): Promise<void> {
  if (c.closedAt !== undefined) return;
  if (!c.socket.write(Buffer.concat(frames))) await Promise.race([new Promise((r) => c.socket.once('drain', r)), c.closed]);
}

function framesOf(c: RawClient): ReadFrame[] {
  return readFrames(c.received());
}

/** A normal call on a connection of its own gets its answer: the sidecar is alive and serving. */
async function stillServing(sc: SidecarProcess, what: string): Promise<void> {
  assert.equal(sc.proc.exitCode, null, `rpcscope is alive after ${what}`);
  const session = http2.connect(sc.url);
  session.on('error', () => {});
  const status = await new Promise<number>((resolve, reject) => {
    const req = session.request({ ':path': '/echo' });
    req.on('response', (h) => resolve(Number(h[':status'])));
    req.on('error', reject);
    req.resume();
    req.end();
  });
  session.close();
  assert.equal(status, 200, `a call after ${what}`);
}

/**
 * 3,000 streams, each a 60 KB header list the app never answers, on one
 * connection: past 10 MiB of held header lists the sidecar refuses them
 * (REFUSED_STREAM, counted memory_budget) instead of holding 180 MB.
 */
async function heldHeaderLists(plain: SidecarProcess, plane: string): Promise<void> {
  const c = await h2Raw(plain.port);
  const before = rssBytes(plain.proc.pid!);
  const sampler = rssSampler(plain.proc.pid!, 50);
  const counted = await scrape(plain.adminUrl, 'rpcscope_streams_refused_total', { reason: 'memory_budget' });
  const big = literal('x-held', 'h'.repeat(60_000));
  const n = 3000;
  for (let i = 0; i < n; i++) await write(c, headerBlockFrames(1 + 2 * i, requestBlock('/hold', 'GET', [big]), true));
  const refusedCount = (): number => [...resets(framesOf(c)).values()].filter((code) => code === H2_ERROR.REFUSED_STREAM).length;
  await eventually(() => refusedCount() > 0, 'streams are refused');
  const refused = await settled(refusedCount, 1000);
  const grown = sampler.stop() - before;
  c.socket.destroy();
  // 10 MiB / (60,000 + the request's fields) ≈ 174 held; the rest refused.
  assert.ok(refused >= n - 200 && refused < n, `${refused} of ${n} refused`);
  assert.equal(await scrape(plain.adminUrl, 'rpcscope_streams_refused_total', { reason: 'memory_budget' }), counted + refused);
  // Without the budget: +247 MiB, all of it held. With it, what grows is mostly V8's young
  // generation widening under 180 MB of decoded lists that are garbage at once, and it stays the
  // same after the close. Each 60 KB block comes split over CONTINUATIONs: put together in one
  // reused buffer (frame-parser.ts), where copies of each part and of the block made the relay on
  // Node 24 grow 150-340 MiB (Node 20's GC caught up with those dead buffers; Node 24's did not).
  assert.ok(grown < 96 * MB, `the sidecar grew ${(grown / MB).toFixed(1)} MiB`);
  reportFigure({ section: 'bad-input', scenario: `3,000 held HTTP/2 streams of 60 KB header lists on one connection, ${plane}`, name: 'sidecar RSS growth', value: Math.round(grown / MB), unit: 'MiB' });
  await stillServing(plain, 'the held header lists');
}

describe('rpcscope relay: one connection cannot make the sidecar hold hundreds of MiB', () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  let hop: CountingHop;
  let otlp: OtlpReceiver;
  let traced: SidecarProcess;
  let plain: SidecarProcess;
  before(async () => {
    app = await startApp();
    hop = await startCountingHop(app.port);
    otlp = await startOtlpReceiver();
    // Tracing on puts the relay in translate mode: it writes each request header block anew.
    traced = await startSidecarProcess(['--upstream', hop.url, '--data-plane', 'relay'], { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: '200' });
    plain = await startSidecarProcess(['--upstream', hop.url, '--data-plane', 'relay']);
  });
  after(async () => {
    await traced.stop();
    await plain.stop();
    hop.close();
    app.close();
    await otlp.close();
  });

  it('with tracing on, a trailers block of 147,000 one-octet references to a 4 KB table entry reaches the app as a reset, not as 600 MB of literals', async () => {
    const c = await h2Raw(traced.port);
    const before = rssBytes(traced.proc.pid!);
    const sampler = rssSampler(traced.proc.pid!, 50);
    const sentBefore = hop.toTarget();
    // The request puts a 4,000-octet field in the table (index 62); each 0xbe octet of the trailers names it again.
    await write(c, headerBlockFrames(1, requestBlock('/hold', 'POST', [indexedLiteral('x-big', 'a'.repeat(4000))]), false));
    await write(c, headerBlockFrames(1, Buffer.alloc(9 * 16_384, 0xbe), true));
    const code = await eventually(() => resets(framesOf(c)).get(1), 'the stream is reset');
    const sent = (await settled(() => hop.toTarget(), 500)) - sentBefore;
    const grown = sampler.stop() - before;
    c.socket.destroy();
    assert.equal(code, H2_ERROR.ENHANCE_YOUR_CALM, 'reset as nghttp2 resets a header list it will not take');
    assert.ok(sent < MB, `the app was sent ${sent} octets`);
    assert.ok(grown < 48 * MB, `the sidecar grew ${(grown / MB).toFixed(1)} MiB`);
    reportFigure({ section: 'bad-input', scenario: 'HTTP/2 trailers of 147,000 references to a 4 KB entry, tracing on, relay', name: 'sidecar RSS growth', value: Math.round(grown / MB), unit: 'MiB' });
    await stillServing(traced, 'the amplified trailers');
  });

  it('with tracing on, an oversized block on a refused or ended stream is not written anew either', async () => {
    const c = await h2Raw(traced.port);
    const sentBefore = hop.toTarget();
    // The request's body stays open: the app answers and ends the stream, and the client may still send its trailers.
    await write(c, headerBlockFrames(1, requestBlock('/echo', 'POST', [indexedLiteral('x-big', 'b'.repeat(4000))]), false));
    await eventually(() => framesOf(c).some((f) => f.type === FRAME.DATA && f.streamId === 1 && f.flags & FLAG.END_STREAM), 'the first call is answered');
    // Stream 1 is over at the app: a header block on it is decoded (the table must stay in step) and, over the size, goes
    // nowhere. (Had the client ended stream 1 itself, the block would be a connection error: test/conformance.)
    await write(c, headerBlockFrames(1, Buffer.alloc(9 * 16_384, 0xbe), true));
    await write(c, headerBlockFrames(3, requestBlock('/echo'), true));
    await eventually(() => framesOf(c).some((f) => f.type === FRAME.HEADERS && f.streamId === 3), 'the next call is answered');
    const sent = (await settled(() => hop.toTarget(), 500)) - sentBefore;
    c.socket.destroy();
    assert.ok(sent < MB, `the app was sent ${sent} octets`);
  });

  for (const [what, setting, code] of [
    ['SETTINGS_INITIAL_WINDOW_SIZE 2^31', [0x4, 2 ** 31], H2_ERROR.FLOW_CONTROL_ERROR],
    ['SETTINGS_ENABLE_PUSH 2', [0x2, 2], H2_ERROR.PROTOCOL_ERROR],
    ['SETTINGS_MAX_FRAME_SIZE 1,000', [0x5, 1000], H2_ERROR.PROTOCOL_ERROR],
  ] as const) {
    it(`ends a connection that sends ${what} itself, before the app reads it and sheds its limits`, async () => {
      const c = await h2Raw(plain.port);
      await write(c, [settings([[setting[0], setting[1]]])]);
      await Promise.race([c.closed, eventually(() => c.closedAt, 'the connection closes')]);
      assert.deepEqual(goawayCodes(framesOf(c)), [code]);
    });
  }

  it('ends a connection whose frame is over the app’s SETTINGS_MAX_FRAME_SIZE with FRAME_SIZE_ERROR', async () => {
    const c = await h2Raw(plain.port);
    await write(c, [frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, Buffer.concat([requestBlock('/echo'), literal('x-pad', 'p'.repeat(20_000))]))]);
    await eventually(() => c.closedAt, 'the connection closes');
    assert.deepEqual(goawayCodes(framesOf(c)), [0x6]);
    assert.ok(!framesOf(c).some((f) => f.type === FRAME.HEADERS && f.streamId === 1), 'the oversized frame is never a call');
  });

  it('refuses streams past 10 MiB of held header lists on one connection (REFUSED_STREAM, counted memory_budget), not 3,000 × 60 KB', () => heldHeaderLists(plain, 'relay'));

  it('refuses streams past 1,000 open on one connection when the app advertises no limit (REFUSED_STREAM, counted stream_limit)', async () => {
    const c = await h2Raw(plain.port);
    const counted = await scrape(plain.adminUrl, 'rpcscope_streams_refused_total', { reason: 'stream_limit' });
    const frames: Buffer[] = [];
    for (let i = 0; i < 1100; i++) frames.push(...headerBlockFrames(1 + 2 * i, requestBlock('/hold'), true));
    await write(c, frames);
    const refused = await eventually(() => {
      const r = [...resets(framesOf(c)).entries()].filter(([, code]) => code === H2_ERROR.REFUSED_STREAM);
      return r.length >= 100 && r;
    }, '100 streams are refused');
    c.socket.destroy();
    assert.deepEqual(refused.map(([id]) => id), Array.from({ length: 100 }, (_, i) => 1 + 2 * (1000 + i)), 'the streams past the 1,000th');
    assert.equal(await scrape(plain.adminUrl, 'rpcscope_streams_refused_total', { reason: 'stream_limit' }), counted + 100);
    await stillServing(plain, 'the 1,100 streams');
  });
});

describe('rpcscope balanced relay (an outbound sidecar): one connection cannot make the sidecar hold hundreds of MiB', () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  let balanced: SidecarProcess;
  before(async () => {
    app = await startApp();
    balanced = await startSidecarProcess(['--upstream', `http://127.0.0.1:${app.port}`, '--mode', 'outbound', '--outbound-data-plane', 'relay', '--upstream-protocol', 'http2']);
  });
  after(async () => {
    await balanced.stop();
    app.close();
  });

  it('refuses streams past 10 MiB of held requests on one connection (REFUSED_STREAM, counted memory_budget), not 3,000 × 60 KB', () => heldHeaderLists(balanced, 'balanced relay'));
});
