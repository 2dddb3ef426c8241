// HTTP/2 conformance (RFC 9113) of the real `sidecar/bin/rpcscope` on both data
// planes, in front of a real node:http2 app: each case writes the frames of one
// case of h2spec over a raw socket (its section in the test's name) and asserts
// what the client reads back — the GOAWAY or RST_STREAM code the RFC names, or
// the answer it is owed — within a bounded wait, never silence. The planes
// answer alike except where Node's HTTP/2 core decides on the terminating path;
// those cases assert what Node answers, and README.md's conformance table says why.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { eventually } from '../support/eventually.ts';
import { FLAG, FRAME, H2_ERROR, PREFACE, frame, goawayCodes, literal, readFrames, requestBlock, resets, settings, windowUpdate, type ReadFrame } from '../support/h2-frames.ts';
import { rawConnect, terminated, type RawClient } from '../support/raw-client.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

/** How long a case waits for its answer: far above any answer's time, and what "silence" means here. */
const ANSWER_MS = 5000;
/** The largest flow-control window (RFC 9113 §6.9.1). */
const MAX_WINDOW = 2 ** 31 - 1;

/** An app that answers `ok` at once, except /hold, which it never answers (its stream stays open), and /ping. */
async function startApp(): Promise<{ port: number; close(): void }> {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    if (headers[':path'] === '/hold') return;
    // /ping is answered once the client has acknowledged the app's PING (on the terminating path, the sidecar does).
    if (headers[':path'] === '/ping') return void stream.session?.ping(Buffer.from('app-ping'), (err) => (err ? stream.close(0x2) : (stream.respond({ ':status': 200 }), stream.end('pong'))));
    stream.respond({ ':status': 200 });
    stream.end('ok');
  });
  server.on('sessionError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}

/** A raw HTTP/2 connection past its start: preface, SETTINGS, the server's SETTINGS read and acknowledged. */
async function h2Raw(port: number): Promise<RawClient> {
  const c = await rawConnect(port);
  c.socket.write(Buffer.concat([PREFACE, settings()]));
  await eventually(() => readFrames(c.received()).some((f) => f.type === FRAME.SETTINGS && !(f.flags & FLAG.ACK)), 'the server’s SETTINGS arrive', ANSWER_MS);
  c.socket.write(settings([], FLAG.ACK));
  return c;
}

function send(c: RawClient, ...frames: Buffer[]): void {
  c.socket.write(Buffer.concat(frames));
}

const framesOf = (c: RawClient): ReadFrame[] => readFrames(c.received());

/** HEADERS opening `id` with a request for `path`; END_STREAM unless `open`. */
function request(id: number, path = '/', open = false): Buffer {
  return frame(FRAME.HEADERS, FLAG.END_HEADERS | (open ? 0 : FLAG.END_STREAM), id, requestBlock(path, open ? 'POST' : 'GET'));
}

/** The stream's response is whole (DATA with END_STREAM). */
function answered(c: RawClient, id: number): Promise<true> {
  return eventually(() => framesOf(c).some((f) => (f.type === FRAME.DATA || f.type === FRAME.HEADERS) && f.streamId === id && f.flags & FLAG.END_STREAM) || undefined, `stream ${id} is answered`, ANSWER_MS);
}

/**
 * A connection error (RFC 9113 §5.4.1): GOAWAY with `code`, then the connection
 * closes — unless `closes` is false, where Node's HTTP/2 core sends the GOAWAY and
 * leaves the socket to the client or --idle-timeout (README.md, conformance).
 */
async function connectionError(c: RawClient, code: number, closes = true): Promise<void> {
  await eventually(() => goawayCodes(framesOf(c)).length > 0 || c.closedAt !== undefined, 'a GOAWAY or the close', ANSWER_MS);
  assert.deepEqual(goawayCodes(framesOf(c)), [code], 'the GOAWAY’s code');
  if (closes) await Promise.race([c.closed, eventually(() => c.closedAt, 'the connection closes after its GOAWAY', ANSWER_MS)]);
}

/**
 * Where Node's HTTP/2 core ignores the frame (the terminating path; README.md,
 * conformance): the client reads no error, and the connection goes on — a new
 * call on stream `next` is answered.
 */
async function ignoredByNode(c: RawClient, next: number): Promise<void> {
  send(c, request(next));
  await answered(c, next);
  assert.deepEqual(goawayCodes(framesOf(c)), [], 'no GOAWAY');
  assert.equal(c.closedAt, undefined, 'the connection is open');
}

/** A stream error (RFC 9113 §5.4.2): RST_STREAM on `id` with `code`; ending the connection instead, with the same code, is allowed too (§5.4.1). */
async function streamError(c: RawClient, id: number, code: number): Promise<void> {
  const got = await eventually(() => resets(framesOf(c)).get(id) ?? goawayCodes(framesOf(c))[0], `a RST_STREAM on stream ${id} or a GOAWAY`, ANSWER_MS);
  assert.equal(got, code, `the code of the answer to stream ${id}`);
}

/** RST_STREAM CANCEL (RFC 9113 §7: 0x8). */
const rstStream = (id: number): Buffer => frame(FRAME.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 0x8]));
const settingsFrame = (id: number, value: number): Buffer => settings([[id, value]]);

/** The sidecar's arguments for each plane: the two inbound ones, and the balanced relay of an outbound sidecar. */
const PLANE_ARGS = {
  relay: ['--data-plane', 'relay'],
  terminate: ['--data-plane', 'terminate'],
  balanced: ['--mode', 'outbound', '--outbound-data-plane', 'relay', '--upstream-protocol', 'http2'],
} as const;

for (const plane of ['relay', 'terminate', 'balanced'] as const) {
  /** The relays answer as RFC 9113 says; node:http2 (terminate) differs where README.md's conformance table says. */
  const rfc = plane !== 'terminate';
  describe(`rpcscope (${PLANE_ARGS[plane].join(' ')}) answers each RFC 9113 conformance case`, () => {
    let app: Awaited<ReturnType<typeof startApp>>;
    let sc: SidecarProcess;
    before(async () => {
      app = await startApp();
      sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${app.port}`, ...PLANE_ARGS[plane]]);
    });
    after(async () => {
      await sc.stop();
      app.close();
    });

    describe('3.5 connection preface, on the port that also serves HTTP/1.1', () => {
      it('an HTTP/2 preface that goes wrong after its first line: GOAWAY PROTOCOL_ERROR, then close', async () => {
        const c = await rawConnect(sc.port);
        const counted = await terminated(sc.adminUrl, 'protocol_error');
        c.socket.write('PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n');
        await connectionError(c, H2_ERROR.PROTOCOL_ERROR);
        assert.equal(await terminated(sc.adminUrl, 'protocol_error'), counted + 1, 'counted as a connection the sidecar ended');
      });
      it('bytes that are no HTTP/2 preface are an HTTP/1.1 request: 400, then close', async () => {
        const c = await rawConnect(sc.port);
        c.socket.write('INVALID CONNECTION PREFACE\r\n\r\n');
        await Promise.race([c.closed, eventually(() => c.closedAt, 'the connection closes', ANSWER_MS)]);
        assert.match(c.received().toString('latin1'), /^HTTP\/1\.1 400 /);
      });
    });

    describe('4.2 frame size', () => {
      it('DATA over SETTINGS_MAX_FRAME_SIZE: FRAME_SIZE_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold', true), frame(FRAME.DATA, 0, 1, Buffer.alloc(16_385)));
        await streamError(c, 1, H2_ERROR.FRAME_SIZE_ERROR);
      });
      it(`HEADERS over SETTINGS_MAX_FRAME_SIZE: GOAWAY FRAME_SIZE_ERROR${rfc ? ', then close' : ' (Node leaves the socket open)'}`, async () => {
        const c = await h2Raw(sc.port);
        send(c, frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, Buffer.concat([requestBlock('/'), literal('x-pad', 'p'.repeat(16_400))])));
        await connectionError(c, H2_ERROR.FRAME_SIZE_ERROR, rfc);
      });
    });

    describe('5.1 stream states', () => {
      it(`idle: DATA: GOAWAY PROTOCOL_ERROR${rfc ? ', then close' : ' (Node leaves the socket open)'}`, async () => {
        const c = await h2Raw(sc.port);
        send(c, frame(FRAME.DATA, FLAG.END_STREAM, 1, Buffer.from('test')));
        await connectionError(c, H2_ERROR.PROTOCOL_ERROR, rfc);
      });
      it('idle: RST_STREAM: GOAWAY PROTOCOL_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, rstStream(1));
        await connectionError(c, H2_ERROR.PROTOCOL_ERROR);
      });
      it('idle: WINDOW_UPDATE: GOAWAY PROTOCOL_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, windowUpdate(1, 100));
        await connectionError(c, H2_ERROR.PROTOCOL_ERROR);
      });
      it('half closed (remote): DATA: STREAM_CLOSED', async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold'), frame(FRAME.DATA, FLAG.END_STREAM, 1, Buffer.from('test')));
        await streamError(c, 1, H2_ERROR.STREAM_CLOSED);
      });
      it('half closed (remote): HEADERS: STREAM_CLOSED', async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold'), request(1, '/hold'));
        await streamError(c, 1, H2_ERROR.STREAM_CLOSED);
      });
      it(`closed: DATA after RST_STREAM: ${rfc ? 'STREAM_CLOSED' : 'ignored by Node'}`, async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold', true), rstStream(1), frame(FRAME.DATA, FLAG.END_STREAM, 1, Buffer.from('test')));
        if (plane === 'terminate') return ignoredByNode(c, 3);
        await streamError(c, 1, H2_ERROR.STREAM_CLOSED);
      });
      it(`closed: HEADERS after RST_STREAM: ${rfc ? 'STREAM_CLOSED' : 'ignored by Node'}`, async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold', true), rstStream(1), request(1, '/hold'));
        if (plane === 'terminate') return ignoredByNode(c, 3);
        await streamError(c, 1, H2_ERROR.STREAM_CLOSED);
      });
      it(`closed: DATA: ${rfc ? 'GOAWAY STREAM_CLOSED' : 'ignored by Node'}`, async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1));
        await answered(c, 1);
        send(c, frame(FRAME.DATA, FLAG.END_STREAM, 1, Buffer.from('test')));
        if (plane === 'terminate') return ignoredByNode(c, 3);
        await connectionError(c, H2_ERROR.STREAM_CLOSED);
      });
      it(`closed: HEADERS: ${rfc ? 'GOAWAY STREAM_CLOSED' : 'ignored by Node'}`, async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1));
        await answered(c, 1);
        send(c, request(1));
        if (plane === 'terminate') return ignoredByNode(c, 3);
        await connectionError(c, H2_ERROR.STREAM_CLOSED);
      });
    });

    describe('5.1.1 stream identifiers', () => {
      it(`a stream identifier numerically smaller than the previous one: ${rfc ? 'GOAWAY PROTOCOL_ERROR' : 'ignored by Node'}`, async () => {
        const c = await h2Raw(sc.port);
        const counted = await terminated(sc.adminUrl, 'protocol_error');
        send(c, request(5), request(3));
        if (plane === 'terminate') return ignoredByNode(c, 7);
        await connectionError(c, H2_ERROR.PROTOCOL_ERROR);
        assert.equal(await terminated(sc.adminUrl, 'protocol_error'), counted + 1, 'counted as a connection the sidecar ended');
      });
      it(`a lower identifier after a stream that is over: ${rfc ? 'GOAWAY PROTOCOL_ERROR' : 'ignored by Node'}`, async () => {
        const c = await h2Raw(sc.port);
        send(c, request(7));
        await answered(c, 7);
        send(c, request(1));
        if (plane === 'terminate') return ignoredByNode(c, 9);
        await connectionError(c, H2_ERROR.PROTOCOL_ERROR);
      });
    });

    describe('5.3.1 stream dependencies', () => {
      it('HEADERS depending on itself: PROTOCOL_ERROR', async () => {
        const c = await h2Raw(sc.port);
        const dependency = Buffer.from([0, 0, 0, 1, 15]);
        send(c, frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM | FLAG.PRIORITY, 1, Buffer.concat([dependency, requestBlock('/')])));
        await streamError(c, 1, H2_ERROR.PROTOCOL_ERROR);
      });
      // Node 24's nghttp2 (1.70) no longer reads PRIORITY frames (RFC 9113 deprecates RFC 7540's priorities): the terminating path ignores them.
      it(`PRIORITY depending on itself: ${rfc ? 'PROTOCOL_ERROR' : 'ignored by Node'}`, async () => {
        const c = await h2Raw(sc.port);
        send(c, frame(FRAME.PRIORITY, 0, 1, Buffer.from([0, 0, 0, 1, 15])));
        if (plane === 'terminate') return ignoredByNode(c, 3);
        await streamError(c, 1, H2_ERROR.PROTOCOL_ERROR);
      });
    });

    describe('6.1 DATA', () => {
      it('DATA on a stream not open or half-closed (local): STREAM_CLOSED', async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold'), frame(FRAME.DATA, FLAG.END_STREAM, 1, Buffer.from('test')));
        await streamError(c, 1, H2_ERROR.STREAM_CLOSED);
      });
    });

    describe('6.3 PRIORITY', () => {
      it(`PRIORITY on stream 0: ${rfc ? 'GOAWAY PROTOCOL_ERROR' : 'ignored by Node'}`, async () => {
        const c = await h2Raw(sc.port);
        send(c, frame(FRAME.PRIORITY, 0, 0, Buffer.from([0, 0, 0, 1, 15])));
        if (plane === 'terminate') return ignoredByNode(c, 1);
        await connectionError(c, H2_ERROR.PROTOCOL_ERROR);
      });
      it('PRIORITY of a length other than 5: FRAME_SIZE_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold', true), frame(FRAME.PRIORITY, 0, 1, Buffer.from([0, 0, 0, 0])));
        await streamError(c, 1, H2_ERROR.FRAME_SIZE_ERROR);
      });
    });

    describe('6.4 RST_STREAM', () => {
      it('RST_STREAM on an idle stream: GOAWAY PROTOCOL_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, rstStream(3));
        await connectionError(c, H2_ERROR.PROTOCOL_ERROR);
      });
    });

    describe('6.5.2 defined SETTINGS parameters', () => {
      for (const [what, id, value, code] of [
        ['SETTINGS_ENABLE_PUSH other than 0 or 1', 0x2, 2, H2_ERROR.PROTOCOL_ERROR],
        ['SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1', 0x4, 2 ** 31, H2_ERROR.FLOW_CONTROL_ERROR],
        ['SETTINGS_MAX_FRAME_SIZE below its initial value', 0x5, 16_383, H2_ERROR.PROTOCOL_ERROR],
        ['SETTINGS_MAX_FRAME_SIZE above its maximum', 0x5, 2 ** 24, H2_ERROR.PROTOCOL_ERROR],
      ] as const) {
        it(`${what}: GOAWAY ${code === H2_ERROR.PROTOCOL_ERROR ? 'PROTOCOL_ERROR' : 'FLOW_CONTROL_ERROR'}`, async () => {
          const c = await h2Raw(sc.port);
          send(c, settingsFrame(id, value));
          await connectionError(c, code);
        });
      }
    });

    describe('6.7 PING', () => {
      it(`a PING with ACK nobody sent: ${rfc ? 'ignored, the next PING is acknowledged' : 'Node ends the connection'}`, async () => {
        const c = await h2Raw(sc.port);
        const unsolicited = Buffer.from('invalid\0', 'latin1');
        const expected = Buffer.from('rpcscope', 'latin1');
        send(c, frame(FRAME.PING, FLAG.ACK, 0, unsolicited), frame(FRAME.PING, 0, 0, expected));
        const ack = await eventually(() => framesOf(c).find((f) => f.type === FRAME.PING && f.flags & FLAG.ACK) ?? (c.closedAt !== undefined ? ({ closed: true } as const) : undefined), 'a PING ACK or the close', ANSWER_MS);
        // Node's HTTP/2 core ends the session on an ACK it never asked for (README.md, conformance).
        if (plane === 'terminate') return connectionError(c, H2_ERROR.PROTOCOL_ERROR);
        assert.ok(!('closed' in ack), 'the connection stays open');
        assert.deepEqual(ack.payload, expected, 'the ACK is of the client’s own PING');
      });
      it('the ACK of a PING the app sent still reaches the app', async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/ping'));
        // The 1:1 relay passes the app's PING to the client; the balanced relay answers it on its endpoint hop.
        if (plane === 'relay') {
          const ping = await eventually(() => framesOf(c).find((f) => f.type === FRAME.PING && !(f.flags & FLAG.ACK)), 'the app’s PING', ANSWER_MS);
          send(c, frame(FRAME.PING, FLAG.ACK, 0, ping.payload));
        }
        await answered(c, 1);
        assert.deepEqual(goawayCodes(framesOf(c)), [], 'no GOAWAY');
      });
    });

    describe('7 error codes', () => {
      it(`a GOAWAY with an unknown code, then a PING: ${rfc ? 'the PING is acknowledged' : 'Node ends the connection'}`, async () => {
        const c = await h2Raw(sc.port);
        const goaway = Buffer.alloc(8);
        goaway.writeUInt32BE(0xff, 4);
        const expected = Buffer.from('rpcscope', 'latin1');
        // The client's GOAWAY makes a node:http2 app close its connection: the relay carries the client's on, and answers what the app left unanswered.
        send(c, frame(FRAME.GOAWAY, 0, 0, goaway), frame(FRAME.PING, 0, 0, expected));
        // Node's HTTP/2 core ends its session on a GOAWAY of any code but NO_ERROR, the PING unanswered (docs/conformance.md).
        if (plane === 'terminate') return connectionError(c, H2_ERROR.NO_ERROR);
        const ack = await eventually(() => framesOf(c).find((f) => f.type === FRAME.PING && f.flags & FLAG.ACK), 'the PING’s ACK', ANSWER_MS);
        assert.deepEqual(ack.payload, expected);
      });
    });

    describe('6.9 WINDOW_UPDATE', () => {
      it('an increment of 0 on the connection: GOAWAY PROTOCOL_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, windowUpdate(0, 0));
        await connectionError(c, H2_ERROR.PROTOCOL_ERROR);
      });
      it('an increment of 0 on a stream: PROTOCOL_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold', true), windowUpdate(1, 0));
        await streamError(c, 1, H2_ERROR.PROTOCOL_ERROR);
      });
    });

    describe('6.9.1 the flow-control window', () => {
      it('WINDOW_UPDATEs raising the connection window above 2^31-1: GOAWAY FLOW_CONTROL_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, windowUpdate(0, MAX_WINDOW), windowUpdate(0, MAX_WINDOW));
        await connectionError(c, H2_ERROR.FLOW_CONTROL_ERROR);
      });
      it('WINDOW_UPDATEs raising a stream window above 2^31-1: FLOW_CONTROL_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold', true), windowUpdate(1, MAX_WINDOW), windowUpdate(1, MAX_WINDOW));
        await streamError(c, 1, H2_ERROR.FLOW_CONTROL_ERROR);
      });
    });

    describe('6.9.2 initial flow-control window size', () => {
      it('SETTINGS_INITIAL_WINDOW_SIZE that takes a stream window past 2^31-1: FLOW_CONTROL_ERROR', async () => {
        const c = await h2Raw(sc.port);
        send(c, request(1, '/hold', true), windowUpdate(1, MAX_WINDOW - 65_535), settingsFrame(0x4, 65_536));
        await streamError(c, 1, H2_ERROR.FLOW_CONTROL_ERROR);
      });
    });
  });
}
