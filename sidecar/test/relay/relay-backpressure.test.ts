// Backpressure on a relayed connection whose upstream went away gracefully
// (GOAWAY NO_ERROR, then close): its calls then go over connections of the
// relay's own, and the relay, not the app, opens the client's windows and writes
// the answers. A client must still be held to what the app reads and must still
// read what it asked for, or one connection fills the sidecar: an upload to an
// app that reads nothing stops at the flow-control windows, and an answer to a
// client that reads nothing stops once a bounded amount waits in its socket.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startCountingHop, type CountingHop } from '../../../test/support/counting-hop.ts';
import { eventually, settled } from '../../../test/support/eventually.ts';
import { encodeLiteralBlock } from '../../src/relay/frame-writer.ts';
import { SETTINGS_ACK, frame, headersFrame } from '../../src/h2/frames.ts';
import { CLIENT_PREFACE, FrameType } from '../../src/h2/frame-types.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const MiB = 1024 * 1024;

interface App {
  port: number;
  /** Sessions open now. */
  sessions: Set<http2.ServerHttp2Session>;
  close(): void;
}

/** /sink: never read, never answered. /big: 200 MiB, written as fast as the connection takes it. Anything else: `ok`. */
async function startApp(): Promise<App> {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  let written = 0;
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
    s.on('error', () => {});
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const path = headers[':path'];
    if (path === '/sink') return void stream.pause();
    stream.respond({ ':status': 200 });
    if (path !== '/big') return void stream.end('ok');
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const pump = (): void => {
      while (written < 200 * MiB && !stream.destroyed) {
        written += chunk.length;
        if (!stream.write(chunk)) return void stream.once('drain', pump);
      }
      stream.end();
    };
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    sessions,
    close: () => {
      for (const s of sessions) s.destroy();
      server.close();
    },
  };
}

/** The app goes away gracefully from every connection it has: GOAWAY NO_ERROR, then close. */
async function appGoesAway(app: App): Promise<void> {
  for (const s of app.sessions) s.close();
  await eventually(() => app.sessions.size === 0, 'the app closed its connections');
}

describe('relay: backpressure once the upstream went away gracefully', () => {
  let app: App;
  let appHop: CountingHop;
  let sc: TestSidecar;
  before(async () => {
    app = await startApp();
    appHop = await startCountingHop(app.port);
    sc = await startTestSidecar(appHop.url, ['--data-plane', 'relay']);
  });
  after(async () => {
    await sc.stop();
    appHop.close();
    app.close();
  });

  it('holds an upload to an app that reads nothing at the windows: the client cannot send 64 MiB into the sidecar', async () => {
    const clientHop = await startCountingHop(sc.port);
    const session = http2.connect(clientHop.url);
    session.on('error', () => {});
    const ok = session.request({ ':path': '/ok' });
    ok.resume();
    await new Promise((r) => ok.on('end', r));
    await appGoesAway(app);
    // The client's connection goes on; this call goes over a connection of the relay's own.
    const upload = session.request({ ':path': '/sink', ':method': 'POST' });
    upload.on('error', () => {});
    const chunk = Buffer.alloc(64 * 1024, 0x62);
    let offered = 0;
    const pump = (): void => {
      while (offered < 64 * MiB && !upload.destroyed) {
        offered += chunk.length;
        if (!upload.write(chunk)) return void upload.once('drain', pump);
      }
    };
    pump();
    const sent = await settled(() => clientHop.toTarget(), 1000);
    session.destroy();
    clientHop.close();
    // The app's windows (64 KiB a stream by default) and a few chunks in flight; never the whole body.
    assert.ok(sent < 4 * MiB, `the client got ${(sent / MiB).toFixed(1)} MiB into the sidecar`);
  });

  it('stops writing an answer to a client that reads nothing, whatever windows it opened: the app cannot push 200 MiB into the sidecar', async () => {
    const c = net.connect(sc.port, '127.0.0.1');
    c.on('error', () => {});
    await new Promise((r) => c.once('connect', r));
    // Windows as large as a client may open: 2^31-1 for each stream and for the connection.
    const initialWindow = Buffer.alloc(6);
    initialWindow.writeUInt16BE(0x4, 0);
    initialWindow.writeUInt32BE(0x7fffffff, 2);
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(0x7fffffff - 65_535, 0);
    c.write(Buffer.concat([CLIENT_PREFACE, frame(FrameType.SETTINGS, 0, 0, initialWindow), frame(FrameType.WINDOW_UPDATE, 0, 0, increment)]));
    await new Promise((r) => c.once('data', r));
    c.write(SETTINGS_ACK);
    await eventually(() => app.sessions.size > 0, 'the relay connected to the app');
    await appGoesAway(app);
    const fromAppBefore = appHop.fromTarget();
    c.write(headersFrame(1, encodeLiteralBlock([[':method', 'GET'], [':scheme', 'http'], [':path', '/big'], [':authority', 'app']]), true));
    // From here on the client reads nothing.
    c.pause();
    const pushed = (await settled(() => appHop.fromTarget(), 1000)) - fromAppBefore;
    c.destroy();
    assert.ok(pushed < 16 * MiB, `the app got ${(pushed / MiB).toFixed(1)} MiB into the sidecar`);
  });
});
