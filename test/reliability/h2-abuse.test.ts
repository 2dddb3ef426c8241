// Hostile HTTP/2 clients against the real `sidecar/bin/rpcscope`, on the data
// plane RPCSCOPE_DATA_PLANE names (relay by default, terminate): each writes
// exactly the frames of one abuse shape over a raw socket, and the test checks
// what that client was told (GOAWAY code, RST_STREAM code, the close), the count
// on /metrics, and that the sidecar is alive and a normal client is still served.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, startConnectEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { FLAG, FRAME, H2_ERROR, PREFACE, frame, goawayCodes, literal, ping, priority, readFrames, requestBlock, resets, settings, windowUpdate, type ReadFrame } from '../support/h2-frames.ts';
import { HpackDecoder } from '../../sidecar/src/relay/hpack-decoder.ts';
import { cpuSeconds } from '../support/process-stats.ts';
import { rawConnect, terminated, type RawClient } from '../support/raw-client.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

interface Echo extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
}

/**
 * The planes: the inbound relay and an outbound sidecar's balanced relay by
 * default, node:http2 when RPCSCOPE_DATA_PLANE=terminate (npm test's second pass).
 */
const PLANES = process.env.RPCSCOPE_DATA_PLANE === 'terminate' ? (['terminate'] as const) : (['relay', 'balanced'] as const);
const PLANE_ARGS: Record<'relay' | 'terminate' | 'balanced', string[]> = {
  relay: [],
  terminate: [],
  balanced: ['--mode', 'outbound', '--outbound-data-plane', 'relay', '--upstream-protocol', 'http2'],
};

const CODE_NAMES = new Map<number, string>(Object.entries(H2_ERROR).map(([name, code]) => [code, name]));
const codeName = (code: number | undefined): string => (code === undefined ? 'none' : (CODE_NAMES.get(code) ?? String(code)));

/**
 * Opens a raw HTTP/2 connection: preface and empty SETTINGS, then, once the server's
 * SETTINGS came, their ACK. The abuse follows on a connection already set up.
 */
async function h2Raw(port: number, ack = true): Promise<RawClient> {
  const c = await rawConnect(port);
  c.socket.write(Buffer.concat([PREFACE, settings()]));
  await Promise.race([new Promise((r) => c.socket.once('data', r)), c.closed]);
  if (ack) c.socket.write(settings([], FLAG.ACK));
  return c;
}

/**
 * The :status the server answered `streamId` with: every header block it sent,
 * decoded in order by one HPACK decoder (the balanced relay indexes and Huffman
 * codes its own blocks), the stream's first one read.
 */
function statusOf(frames: ReadFrame[], streamId: number): string | undefined {
  const hpack = new HpackDecoder();
  let status: string | undefined;
  for (const f of frames) {
    if (f.type !== FRAME.HEADERS) continue;
    // Blocks here fit one frame and carry no padding or priority.
    const list = hpack.decode(f.payload);
    if (f.streamId === streamId && status === undefined) status = list[list.indexOf(':status') + 1];
  }
  return status;
}

/** The :status of the response HEADERS on `streamId`, when the server answered with one (HPACK static table: 0x88 is 200). */
function answered(frames: ReadFrame[], streamId: number): boolean {
  return frames.some((f) => f.type === FRAME.HEADERS && f.streamId === streamId);
}

/** Writes the frames at once, as a flooding client does: one buffer, as fast as the socket takes it. */
async function writeAll(c: RawClient, frames: Buffer[]): Promise<void> {
  if (c.closedAt !== undefined) return;
  if (!c.socket.write(Buffer.concat(frames))) await Promise.race([new Promise((r) => c.socket.once('drain', r)), c.closed]);
}

/** Waits for the server to close the connection, or `ms`; then what it sent. */
async function outcome(c: RawClient, ms = 10_000): Promise<{ closed: boolean; frames: ReadFrame[] }> {
  await Promise.race([c.closed, new Promise((r) => setTimeout(r, ms))]);
  const closed = c.closedAt !== undefined;
  c.socket.destroy();
  return { closed, frames: readFrames(c.received()) };
}

for (const PLANE of PLANES) {
/** The relays read every frame and hold a client to its frame budgets; Node's terminating path gives no per-frame hook. */
const RELAY = PLANE !== 'terminate';

describe(`rpcscope binary and hostile HTTP/2 clients (${PLANE})`, () => {
  let upstream: Upstream;
  let sc: SidecarProcess;
  let client: Echo;
  before(async () => {
    upstream = await startConnectEcho();
    sc = await startSidecarProcess(['--upstream', upstream.url, ...PLANE_ARGS[PLANE]]);
    client = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()) as unknown as Echo;
  });
  after(async () => {
    client.close();
    await sc.stop();
    await upstream.close();
  });

  /** The sidecar is alive and a normal gRPC client on its own connection gets its answer. */
  async function stillServing(what: string): Promise<void> {
    assert.equal(sc.proc.exitCode, null, `rpcscope is alive after the ${what}`);
    const message = `after ${what}`;
    const answer = await new Promise<string>((resolve, reject) => client.Echo({ message }, (err, res) => (err ? reject(err) : resolve(res!.message))));
    assert.equal(answer, message);
  }

  it('cuts a PING flood with GOAWAY ENHANCE_YOUR_CALM and counts ping_flood', async () => {
    const c = await h2Raw(sc.port);
    await writeAll(c, Array.from({ length: 5000 }, (_, i) => ping(i)));
    const { closed, frames } = await outcome(c);
    assert.ok(closed, 'the flooding connection is closed');
    assert.equal(goawayCodes(frames)[0], H2_ERROR.ENHANCE_YOUR_CALM, `frames read: ${frames.map((f) => f.type).join(' ')}`);
    assert.equal(await terminated(sc.adminUrl, 'ping_flood'), 1);
    reportFigure({ section: 'bad-input', scenario: `HTTP/2 PING flood (5,000 PINGs), ${PLANE}`, name: 'connection closed', value: `GOAWAY ${codeName(goawayCodes(frames)[0])}` });
    await stillServing('PING flood');
  });

  it('cuts a SETTINGS flood with GOAWAY ENHANCE_YOUR_CALM and counts settings_flood', async () => {
    const c = await h2Raw(sc.port);
    await writeAll(c, Array.from({ length: 2000 }, () => settings([[0x4, 65535]])));
    const { closed, frames } = await outcome(c);
    assert.ok(closed, 'the flooding connection is closed');
    assert.equal(goawayCodes(frames)[0], H2_ERROR.ENHANCE_YOUR_CALM, `frames read: ${frames.map((f) => f.type).join(' ')}`);
    assert.equal(await terminated(sc.adminUrl, 'settings_flood'), 1);
    reportFigure({ section: 'bad-input', scenario: `HTTP/2 SETTINGS flood (2,000 SETTINGS), ${PLANE}`, name: 'connection closed', value: `GOAWAY ${codeName(goawayCodes(frames)[0])}` });
    await stillServing('SETTINGS flood');
  });

  it('closes a CONTINUATION flood (a header block that never ends) and counts continuation_flood', async () => {
    const c = await h2Raw(sc.port);
    // HEADERS without END_HEADERS, then CONTINUATION frames that never set it (CVE-2024-27316).
    const flood = [frame(FRAME.HEADERS, FLAG.END_STREAM, 1, requestBlock('/v1/echo/x'))];
    for (let i = 0; i < 10_000; i++) flood.push(frame(FRAME.CONTINUATION, 0, 1, literal(`x-flood-${i}`, 'v'.repeat(40))));
    await writeAll(c, flood);
    const { closed, frames } = await outcome(c);
    assert.ok(closed, 'the flooding connection is closed');
    // Terminating: nghttp2 gives up past 8 CONTINUATION frames, and the session is
    // ended with ENHANCE_YOUR_CALM rather than Node's INTERNAL_ERROR; the relay cuts it there too.
    const goaway = goawayCodes(frames)[0];
    assert.equal(goaway, H2_ERROR.ENHANCE_YOUR_CALM, `GOAWAY ${codeName(goaway)}`);
    assert.ok(!frames.some((f) => f.type === FRAME.HEADERS && f.streamId === 1), 'the endless request is never answered');
    assert.equal(await terminated(sc.adminUrl, 'continuation_flood'), 1);
    reportFigure({ section: 'bad-input', scenario: `HTTP/2 CONTINUATION flood (10,000 frames, no END_HEADERS), ${PLANE}`, name: 'connection closed', value: `GOAWAY ${codeName(goaway)}` });
    await stillServing('CONTINUATION flood');
  });

  /**
   * A request of too many header fields: answered 431 and never forwarded, its connection
   * closed gracefully, counted bad_request — past the 4096 fields Node once reset uncounted
   * too, up to the most a header block of HEADERS and 8 CONTINUATIONs can hold.
   */
  for (const [what, fields] of [
    ['3,000 header fields', Array.from({ length: 3000 }, (_, i) => literal(`x-m${String(i).padStart(4, '0')}`, 'v'))],
    ['5,000 header fields', Array.from({ length: 5000 }, (_, i) => literal(`x-m${String(i).padStart(4, '0')}`, 'v'))],
    // 0x90: static table index 16, accept-encoding: gzip, deflate (RFC 7541 Appendix A), one octet a field.
    ['147,000 one-octet header fields', [Buffer.alloc(147_000, 0x90)]],
  ] as const) {
    it(`answers 431 to a request with ${what}, never forwarded, closes its connection gracefully and counts bad_request`, async () => {
      const before = await terminated(sc.adminUrl, 'bad_request');
      const cpuBefore = cpuSeconds(sc.proc.pid!);
      const c = await h2Raw(sc.port);
      const block = Buffer.concat([requestBlock('/v1/echo/many'), ...fields]);
      const pieces = Array.from({ length: Math.ceil(block.length / 16_384) }, (_, i) => block.subarray(i * 16_384, (i + 1) * 16_384));
      assert.ok(pieces.length <= 9, `${pieces.length} frames: HEADERS and at most 8 CONTINUATIONs`);
      await writeAll(c, pieces.map((p, i) => frame(i === 0 ? FRAME.HEADERS : FRAME.CONTINUATION, (i === 0 ? FLAG.END_STREAM : 0) | (i === pieces.length - 1 ? FLAG.END_HEADERS : 0), 1, p)));
      const { closed, frames } = await outcome(c);
      const cpuMs = Math.round((cpuSeconds(sc.proc.pid!) - cpuBefore) * 1000);
      assert.ok(answered(frames, 1), 'the stream is answered by the sidecar');
      assert.equal(statusOf(frames, 1), '431', 'with 431');
      assert.ok(closed, 'and the connection is closed');
      assert.ok(goawayCodes(frames).length > 0 && goawayCodes(frames).every((code) => code === H2_ERROR.NO_ERROR), `gracefully: GOAWAY ${goawayCodes(frames).map(codeName).join(', ')}`);
      assert.equal(await terminated(sc.adminUrl, 'bad_request'), before + 1);
      reportFigure({ section: 'bad-input', scenario: `HTTP/2 request with ${what}, ${PLANE}`, name: 'answer', value: '431, then GOAWAY NO_ERROR' });
      reportFigure({ section: 'bad-input', scenario: `HTTP/2 request with ${what}, ${PLANE}`, name: 'sidecar CPU', value: cpuMs, unit: 'ms' });
      await stillServing(what);
    });
  }

  it('answers 431 to a header block over the header list size, and serves the calls before it', async () => {
    const before = await terminated(sc.adminUrl, 'bad_request');
    const c = await h2Raw(sc.port);
    // A normal request first, then 96 KB of header values in HEADERS and 6 CONTINUATIONs.
    const block = [frame(FRAME.HEADERS, FLAG.END_STREAM | FLAG.END_HEADERS, 1, requestBlock('/v1/echo/first')), frame(FRAME.HEADERS, FLAG.END_STREAM, 3, requestBlock('/v1/echo/big'))];
    for (let i = 0; i < 6; i++) block.push(frame(FRAME.CONTINUATION, i === 5 ? FLAG.END_HEADERS : 0, 3, literal(`x-big-${i}`, 'b'.repeat(16_000))));
    await writeAll(c, block);
    const { closed, frames } = await outcome(c);
    assert.ok(answered(frames, 1), 'the request before it is answered');
    assert.equal(statusOf(frames, 3), '431', 'the oversized one is answered 431');
    assert.ok(closed, 'the connection is closed');
    assert.equal(goawayCodes(frames)[0], H2_ERROR.NO_ERROR);
    assert.equal(await terminated(sc.adminUrl, 'bad_request'), before + 1);
    reportFigure({ section: 'bad-input', scenario: `HTTP/2 header block of 96 KB, ${PLANE}`, name: 'answer', value: '431, then GOAWAY NO_ERROR' });
    await stillServing('oversized header block');
  });

  /**
   * A flood of frames owed no answer. The relay reads each one and cuts the client past
   * its budget (relay/frame-budget.ts); the terminating path hands the socket to
   * nghttp2, which has no limit on WINDOW_UPDATE or PRIORITY frames, and Node no
   * per-frame event: such a flood costs the sidecar its reading, measured here, and the
   * connection is left to --idle-timeout. Empty DATA frames Node counts as invalid, and
   * past 1000 (maxSessionInvalidFrames) it ends the session: `terminateCuts`. A PRIORITY
   * flood Node 24's nghttp2 (1.70) cuts itself, GOAWAY ENHANCE_YOUR_CALM, counted as the
   * protocol error it reports: `terminateCuts` names the reason counted where it is not `reason`.
   */
  async function flood(what: string, reason: string, frames: Buffer[], terminateCuts: boolean | string = false): Promise<void> {
    const counted = RELAY || typeof terminateCuts !== 'string' ? reason : terminateCuts;
    const before = await terminated(sc.adminUrl, counted);
    const cpuBefore = cpuSeconds(sc.proc.pid!);
    const c = await h2Raw(sc.port);
    const started = Date.now();
    await writeAll(c, frames);
    const { closed, frames: read } = await outcome(c, RELAY ? 10_000 : 2000);
    const cpuMs = Math.round((cpuSeconds(sc.proc.pid!) - cpuBefore) * 1000);
    if (RELAY || terminateCuts) {
      assert.ok(closed, 'the flooding connection is closed');
      assert.equal(goawayCodes(read)[0], H2_ERROR.ENHANCE_YOUR_CALM, `frames read: ${read.map((f) => f.type).join(' ')}`);
      assert.equal(await terminated(sc.adminUrl, counted), before + 1);
    } else {
      assert.ok(!closed, 'nghttp2 reads the flood and keeps the connection');
      assert.equal(await terminated(sc.adminUrl, counted), before, 'nothing is cut, so nothing is counted');
    }
    const value = closed ? `closed, GOAWAY ${codeName(goawayCodes(read)[0])}` : 'kept open, nothing sent back';
    reportFigure({ section: 'bad-input', scenario: `HTTP/2 ${what}, ${PLANE}`, name: 'connection', value });
    reportFigure({ section: 'bad-input', scenario: `HTTP/2 ${what}, ${PLANE}`, name: 'sidecar CPU while it lasted', value: cpuMs, unit: `ms (${Date.now() - started} ms of wall time)` });
    await stillServing(what);
  }

  it(RELAY ? 'cuts a WINDOW_UPDATE flood with GOAWAY ENHANCE_YOUR_CALM and counts window_update_flood' : 'survives a WINDOW_UPDATE flood', async () => {
    await flood('WINDOW_UPDATE flood (100,000 frames)', 'window_update_flood', Array.from({ length: 100_000 }, () => windowUpdate(0, 1)));
  });

  it(RELAY ? 'cuts a PRIORITY flood with GOAWAY ENHANCE_YOUR_CALM and counts priority_flood' : 'cuts a PRIORITY flood with GOAWAY ENHANCE_YOUR_CALM (nghttp2) and counts protocol_error', async () => {
    await flood('PRIORITY flood (100,000 frames)', 'priority_flood', Array.from({ length: 100_000 }, (_, i) => priority(1 + 2 * (i % 1000))), 'protocol_error');
  });

  it('cuts a flood of empty DATA frames with GOAWAY ENHANCE_YOUR_CALM and counts empty_frame_flood', async () => {
    // One POST whose body never comes, then empty DATA frames on it, none ending the stream.
    const frames = [frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, requestBlock('/v1/echo', 'POST'))];
    for (let i = 0; i < 100_000; i++) frames.push(frame(FRAME.DATA, 0, 1));
    await flood('empty DATA flood (100,000 frames)', 'empty_frame_flood', frames, true);
  });
});

/**
 * Streams over the concurrency limit. The app here advertises 1000, as the sidecar
 * does on the terminating path: relayed, the app's SETTINGS reach the client and
 * the relay holds it to them; terminated, the sidecar's own.
 */
describe(`rpcscope binary and clients over the concurrency limit (${PLANE})`, () => {
  let app: http2.Http2Server;
  let sc: SidecarProcess;
  before(async () => {
    app = http2.createServer({ settings: { maxConcurrentStreams: 1000 } });
    app.on('session', (s) => s.on('error', () => {}));
    // Answers each request once its body is over: a POST whose body never comes stays open.
    app.on('stream', (stream) => {
      stream.on('error', () => {});
      stream.resume();
      // A stream whose connection the sidecar cut also ends, with nothing left to answer.
      stream.on('end', () => !stream.destroyed && stream.respond({ ':status': 200 }, { endStream: true }));
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${(app.address() as AddressInfo).port}`, ...PLANE_ARGS[PLANE]]);
  });
  after(async () => {
    await sc.stop();
    // Its sessions went with the sidecar; close() would wait for none.
    app.close();
  });

  async function stillServing(what: string): Promise<void> {
    assert.equal(sc.proc.exitCode, null, `rpcscope is alive after the ${what}`);
    const client = http2.connect(`http://127.0.0.1:${sc.port}`);
    try {
      const status = await new Promise((resolve, reject) => {
        const req = client.request({ ':path': '/after' }, { endStream: true }).on('response', (h) => resolve(h[':status'])).on('error', reject);
        req.resume();
      });
      assert.equal(status, 200);
    } finally {
      client.close();
    }
  }

  it('refuses streams over the concurrency limit with REFUSED_STREAM before the client acknowledged it', async () => {
    const before = await terminated(sc.adminUrl, 'stream_limit');
    const c = await h2Raw(sc.port, false);
    // POSTs whose body never comes stay open: the first 1000 are forwarded and held.
    await writeAll(c, Array.from({ length: 1100 }, (_, i) => frame(FRAME.HEADERS, FLAG.END_HEADERS, 1 + 2 * i, requestBlock('/v1/echo', 'POST'))));
    const { closed, frames } = await outcome(c, 5000);
    const refused = [...resets(frames)].filter(([, code]) => code === H2_ERROR.REFUSED_STREAM).map(([id]) => id);
    assert.equal(refused.length, 100, 'every stream past the 1000th is refused');
    assert.ok(refused.every((id) => id > 2000), 'and only those');
    assert.ok(!closed, 'the connection stays');
    // RFC 9113 §5.1.2: the client could not yet know the limit; nothing is counted against it.
    assert.equal(await terminated(sc.adminUrl, 'stream_limit'), before);
    reportFigure({ section: 'bad-input', scenario: `HTTP/2 1,100 concurrent streams, limit 1,000 not yet acknowledged, ${PLANE}`, name: 'streams refused', value: `${refused.length}, RST_STREAM REFUSED_STREAM` });
    await stillServing('streams over the limit');
  });

  it('closes a connection that opens streams over the concurrency limit it acknowledged with GOAWAY PROTOCOL_ERROR, and counts stream_limit', async () => {
    const before = { limit: await terminated(sc.adminUrl, 'stream_limit'), protocol: await terminated(sc.adminUrl, 'protocol_error') };
    const c = await h2Raw(sc.port);
    await writeAll(c, Array.from({ length: 1100 }, (_, i) => frame(FRAME.HEADERS, FLAG.END_HEADERS, 1 + 2 * i, requestBlock('/v1/echo', 'POST'))));
    const { closed, frames } = await outcome(c);
    // RFC 9113 §5.1.2 lets a server treat it as a connection error, as nghttp2 does.
    assert.ok(closed, 'the connection is closed');
    const goaway = goawayCodes(frames)[0];
    assert.equal(goaway, H2_ERROR.PROTOCOL_ERROR, `GOAWAY ${codeName(goaway)}`);
    assert.equal(await terminated(sc.adminUrl, 'stream_limit'), before.limit + 1);
    assert.equal(await terminated(sc.adminUrl, 'protocol_error'), before.protocol, 'counted under its own reason only');
    reportFigure({ section: 'bad-input', scenario: `HTTP/2 1,100 concurrent streams, limit 1,000 acknowledged, ${PLANE}`, name: 'connection closed', value: `GOAWAY ${codeName(goaway)}` });
    await stillServing('streams over the acknowledged limit');
  });
});
}
