// A drain's two GOAWAYs on the relays: between the first (last stream id
// 2^31-1) and the second, a client may still open streams (RFC 9113 §6.8), and
// one that arrives after every earlier call ended must still be served, not cut
// by the drain ending the connection. Seen as one call in 800 failing "RST_STREAM
// with code 0" in the rolling-restart scenario; here made certain with raw frames.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { FLAG, FRAME, PREFACE, frame, goawayCodes, readFrames, requestBlock, settings } from '../../../test/support/h2-frames.ts';
import { rawConnect } from '../../../test/support/raw-client.ts';
import { startTestSidecar } from '../support/sidecar.ts';

describe('relays: a stream opened between a drain\'s two GOAWAYs is served', () => {
  let app: http2.Http2Server;
  let port: number;
  before(async () => {
    app = http2.createServer();
    app.on('stream', (stream) => {
      stream.on('error', () => {});
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    port = (app.address() as AddressInfo).port;
  });
  after(() => {
    app.close();
  });

  for (const [plane, args] of [
    ['the 1:1 relay', ['--data-plane', 'relay', '--upstream-protocol', 'http2']],
    ['the balanced relay', ['--mode', 'outbound', '--outbound-data-plane', 'relay', '--upstream-protocol', 'http2']],
  ] as const) {
    it(plane, async () => {
      const sc = await startTestSidecar(`http://127.0.0.1:${port}`, [...args, '--drain-timeout', '5s']);
      const c = await rawConnect(sc.port);
      c.socket.write(Buffer.concat([PREFACE, settings()]));
      c.socket.write(settings([], FLAG.ACK));
      c.socket.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, requestBlock('/first')));
      const answered = (id: number): boolean => readFrames(c.received()).some((f) => f.streamId === id && (f.type === FRAME.DATA || f.type === FRAME.HEADERS) && (f.flags & FLAG.END_STREAM) !== 0);
      for (const until = Date.now() + 5000; !answered(1) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
      assert.ok(answered(1), 'the first call is answered');
      // SIGTERM's drain: the first GOAWAY comes, and no call is in flight.
      const drained = sc.sidecar.drain();
      for (const until = Date.now() + 5000; goawayCodes(readFrames(c.received())).length === 0 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
      assert.equal(goawayCodes(readFrames(c.received())).length, 1, 'the first GOAWAY');
      // Past the drain's first look at the calls in flight (it polls every 50 ms), a new stream, as the first GOAWAY allows.
      await new Promise((r) => setTimeout(r, 200));
      c.socket.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 3, requestBlock('/after-the-first-goaway')));
      for (const until = Date.now() + 5000; !answered(3) && c.closedAt === undefined && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
      assert.ok(answered(3), `the stream opened after the first GOAWAY is answered (connection ${c.closedAt === undefined ? 'open' : 'closed'})`);
      const { unfinished } = await drained;
      assert.equal(unfinished, 0);
      c.socket.destroy();
      await sc.stop().catch(() => {});
    });
  }
});
