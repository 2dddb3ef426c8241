// The relay's client keepalive: a relayed client that has sent nothing for
// --keepalive-interval is sent a PING at a frame boundary; one that answers
// nothing within --keepalive-timeout vanished without FIN or RST, and its
// connection is ended and counted; one that answers keeps its connection, and
// the ACKs of the relay's own PINGs never reach the app, which never sent them.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { eventually } from '../../../test/support/eventually.ts';
import { scrape } from '../../../test/support/raw-client.ts';
import { FLAG, FRAME, PREFACE, readFrames, settings } from '../../../test/support/h2-frames.ts';
import { startSidecarProcess, type SidecarProcess } from '../../../test/support/sidecar-process.ts';

const KEEPALIVE = ['--data-plane', 'relay', '--keepalive-interval', '300ms', '--keepalive-timeout', '300ms'];
/** The relay's keepalive PINGs carry 'rska' in their first four octets (h2/h2-keepalive.ts). */
const OWN = Buffer.from('rska');

describe('relay: client keepalive', () => {
  let app: http2.Http2Server;
  let capture: net.Server;
  /** Every byte the relay sent toward the app, per connection. */
  const toApp: Buffer[][] = [];
  let sc: SidecarProcess;
  before(async () => {
    app = http2.createServer();
    app.on('stream', (s) => {
      s.respond({ ':status': 200 });
      s.end('ok');
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    // A hop that keeps what the relay writes toward the app.
    capture = net.createServer((socket) => {
      const chunks: Buffer[] = [];
      toApp.push(chunks);
      const upstream = net.connect((app.address() as AddressInfo).port, '127.0.0.1');
      socket.on('data', (d: Buffer) => chunks.push(d));
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((r) => capture.listen(0, '127.0.0.1', r));
    sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${(capture.address() as AddressInfo).port}`, ...KEEPALIVE]);
  });
  after(async () => {
    await sc.stop();
    capture.close();
    app.close();
  });

  it('ends the connection of a client that answers no PING, and counts keepalive_timeout', async () => {
    const before = await scrape(sc.adminUrl, 'rpcscope_connections_terminated_total', { reason: 'keepalive_timeout' });
    const c = net.connect(sc.port, '127.0.0.1');
    c.on('error', () => {});
    const received: Buffer[] = [];
    c.on('data', (d: Buffer) => received.push(d));
    await new Promise((r) => c.once('connect', r));
    c.write(Buffer.concat([PREFACE, settings()]));
    await eventually(() => received.length > 0, 'the server preface');
    c.write(settings([], FLAG.ACK));
    // From here the client reads on but answers nothing: a peer gone quiet.
    const closed = new Promise<number>((r) => c.once('close', () => r(Date.now())));
    const start = Date.now();
    const at = await closed;
    const pings = readFrames(Buffer.concat(received)).filter((f) => f.type === FRAME.PING && !(f.flags & FLAG.ACK));
    assert.ok(pings.length >= 1 && pings.every((p) => p.payload.subarray(0, 4).equals(OWN)), 'the relay asked with its own PING');
    // Interval (±10 %) and timeout, with room for a busy machine; never the idle timeout's hour.
    assert.ok(at - start < 5000, `closed ${at - start} ms after going quiet`);
    assert.equal(await scrape(sc.adminUrl, 'rpcscope_connections_terminated_total', { reason: 'keepalive_timeout' }), before + 1);
  });

  it('keeps the connection of a client that answers, and keeps the ACKs of its own PINGs from the app', async () => {
    const session = http2.connect(sc.url);
    session.on('error', () => {});
    const get = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = session.request({ ':path': '/' });
        req.on('response', (h) => resolve(Number(h[':status'])));
        req.on('error', reject);
        req.resume();
        req.end();
      });
    assert.equal(await get(), 200);
    const connection = toApp.at(-1)!;
    // Idle for several intervals: node:http2 answers each PING with its ACK.
    const voided = (): number => readFrames(Buffer.concat(connection).subarray(PREFACE.length)).filter((f) => f.type === 0xfe).length;
    await eventually(() => voided() >= 2, 'two keepalive rounds answered', 10_000);
    assert.equal(session.destroyed, false, 'the connection is kept');
    assert.equal(await get(), 200);
    const frames = readFrames(Buffer.concat(connection).subarray(PREFACE.length));
    assert.ok(!frames.some((f) => f.type === FRAME.PING && f.payload.subarray(0, 4).equals(OWN)), 'no ACK of the relay’s own PINGs reached the app');
    session.close();
  });
});
