// Fault: the app behind the real `sidecar/bin/rpcscope` restarts gracefully under
// load — it sends GOAWAY, finishes the streams it took and a new generation takes
// the new connections — or refuses streams with RST_STREAM(REFUSED_STREAM). The
// upstream never processed those streams, so the sidecar sends each such call
// once more on a fresh attempt (gRPC's transparent retry): no client sees a
// failure, /metrics counts every retry by reason, and nothing else is ever sent
// twice — not a call refused a second time, not one whose body outgrew what is
// held, not one the upstream reset any other way.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { parseExposition, sum } from '../support/metrics-text.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const { NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_INTERNAL_ERROR } = http2.constants;
const raw = (b: Buffer): Buffer => b;
/** Each answer waits this long, so that a restart always finds streams in flight. */
const APP_DELAY_MS = 30;

/** How the app restarts: Node's graceful close, or a GOAWAY whose last stream id cuts the streams in flight in half. */
type Restart = 'close' | 'goaway-below';

/** One connection of the app: its streams in flight, the highest one it began to answer, and its GOAWAY's last stream id. */
interface Conn {
  open: Set<number>;
  answering: number;
  cut: number;
}

/**
 * An HTTP/2 app (gRPC unary echo, REST `GET /items/:id`) on one listening socket
 * whose generations replace each other: a restart hands new connections to a new
 * generation and sends GOAWAY on the old one's, as an app handing its socket to
 * its successor does. It counts the streams it answered and those closed
 * unanswered (refused), and the attempts it saw per `x-call` id.
 */
class App {
  readonly listener = net.createServer((socket) => this.current.emit('connection', socket));
  private current = this.generation();
  generations = 1;
  answered = 0;
  readonly attempts = new Map<string, number>();
  /** Answers per `x-call` id: a call answered twice was processed twice. */
  readonly answers = new Map<string, number>();

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.listener.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.listener.address() as AddressInfo).port}`;
  }

  /** Resolves once the old generation has closed its last connection. */
  restart(how: Restart): Promise<void> {
    const old = this.current;
    this.current = this.generation();
    this.generations++;
    old.emit('restart', how);
    return new Promise((resolve) => old.once('drained', resolve));
  }

  close(): void {
    this.listener.close();
    this.current.emit('restart', 'close');
  }

  private generation(): http2.Http2Server {
    const server = http2.createServer();
    const sessions = new Map<http2.Http2Session, Conn>();
    server.on('session', (session) => {
      sessions.set(session, { open: new Set(), answering: 0, cut: Infinity });
      session.on('error', () => {});
      session.on('close', () => {
        sessions.delete(session);
        if (sessions.size === 0 && server !== this.current) server.emit('drained');
      });
    });
    server.on('restart', (how: Restart) => {
      if (sessions.size === 0) setImmediate(() => server.emit('drained'));
      for (const [session, conn] of sessions) {
        if (how === 'close' || conn.open.size === 0) {
          session.close();
          continue;
        }
        // Never below a stream already being answered: those were processed (RFC 9113 §6.8).
        const ids = [...conn.open].sort((a, b) => a - b);
        conn.cut = Math.max(ids[Math.floor((ids.length - 1) / 2)]!, conn.answering);
        session.goaway(NGHTTP2_NO_ERROR, conn.cut);
        const closeWhenDone = setInterval(() => {
          if ([...conn.open].some((id) => id <= conn.cut)) return;
          clearInterval(closeWhenDone);
          session.close();
        }, 10);
      }
    });
    server.on('stream', (stream, headers) => this.serve(stream, headers, sessions.get(stream.session!)!));
    return server;
  }

  private serve(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, conn: Conn): void {
    const { open } = conn;
    const id = stream.id!;
    open.add(id);
    let answered = false;
    stream.on('error', () => {});
    const callId = headers['x-call'] as string | undefined;
    stream.on('close', () => {
      open.delete(id);
      if (!answered) return;
      this.answered++;
      if (callId !== undefined) this.answers.set(callId, (this.answers.get(callId) ?? 0) + 1);
    });
    const attempt = callId === undefined ? 1 : (this.attempts.get(callId) ?? 0) + 1;
    if (callId !== undefined) this.attempts.set(callId, attempt);
    const rule = headers['x-fault'];
    if ((rule === 'refuse-once' && attempt === 1) || rule === 'refuse-always') return void stream.close(NGHTTP2_REFUSED_STREAM);
    if (rule === 'reset-once' && attempt === 1) return void stream.close(NGHTTP2_INTERNAL_ERROR);
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      if (rule === 'refuse-once-after-body' && attempt === 1) return void stream.close(NGHTTP2_REFUSED_STREAM);
      setTimeout(() => {
        // Above the last stream id of its GOAWAY: the app said it would not process it.
        if (stream.destroyed || id > conn.cut) return void stream.close(NGHTTP2_REFUSED_STREAM);
        answered = true;
        conn.answering = Math.max(conn.answering, id);
        if (headers['content-type'] === 'application/grpc') {
          stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
          stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
          stream.end(Buffer.concat(chunks));
        } else {
          stream.respond({ ':status': 200, 'content-type': 'application/json' });
          stream.end(JSON.stringify({ path: headers[':path'], bytes: Buffer.concat(chunks).length }));
        }
      }, APP_DELAY_MS);
    });
  }
}

/** A grpc-js unary call echoing `text`: its status and the echo. */
function grpcUnary(client: grpc.Client, text: string, metadata = new grpc.Metadata()): Promise<{ code: number; details?: string; echo: string }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest('/test.Echo/Unary', raw, raw, Buffer.from(text), metadata, (err, value) => {
      resolve(err ? { code: err.code, details: err.details, echo: '' } : { code: grpc.status.OK, echo: value!.toString() });
    });
  });
}

/** One request over a raw HTTP/2 session: status, body, and the reset code that closed the stream. */
function h2Call(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Buffer): Promise<{ status: number | undefined; body: string; rstCode: number | undefined }> {
  return new Promise((resolve) => {
    const req = session.request(headers, { endStream: body === undefined });
    if (body !== undefined) req.end(body);
    let status: number | undefined;
    const chunks: Buffer[] = [];
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => {});
    req.on('close', () => resolve({ status, body: Buffer.concat(chunks).toString(), rstCode: req.rstCode }));
  });
}

async function metrics(sc: SidecarProcess): Promise<ReturnType<typeof parseExposition>> {
  return parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text());
}

const retries = (m: ReturnType<typeof parseExposition>, reason: string): number => sum(m, 'rpcscope_upstream_retries_total', { reason });

for (const how of ['goaway-below', 'close'] as const) {
  describe(`the app restarting gracefully (${how === 'close' ? "Node's session.close()" : 'GOAWAY with a last stream id below the streams in flight'}) under load, behind the real binary`, () => {
    let app: App;
    let sc: SidecarProcess;

    before(async () => {
      app = new App();
      sc = await startSidecarProcess(['--upstream', await app.listen(), '--upstream-protocol', 'http2', '--log-level', 'info']);
    });
    after(async () => {
      await sc.stop();
      app.close();
    });

    it('loses no call: 150 grpc-js unary calls and 150 REST calls over HTTP/2 across three restarts all succeed', async () => {
      const CALLS = 150;
      const client = new grpc.Client(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure());
      const session = http2.connect(sc.url);
      session.on('error', () => {});
      const spread = (i: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, i * 6));
      const grpcCalls = Array.from({ length: CALLS }, async (_, i) => {
        await spread(i);
        const md = new grpc.Metadata();
        md.set('x-call', `g${i}`);
        return grpcUnary(client, `call ${i}`, md);
      });
      const restCalls = Array.from({ length: CALLS }, async (_, i) => {
        await spread(i);
        return h2Call(session, { ':method': 'GET', ':path': `/items/${i}`, 'x-call': `r${i}` });
      });
      // Each restart waits for the previous generation to finish: a call is retried
      // once, so one caught by two GOAWAYs in a row would rightly fail.
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (let r = 0; r < 3; r++) {
        await app.restart(how);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const grpcResults = await Promise.all(grpcCalls);
      const restResults = await Promise.all(restCalls);
      client.close();
      session.close();

      assert.deepEqual(grpcResults.flatMap((r, i) => (r.code === grpc.status.OK && r.echo === `call ${i}` ? [] : [{ i, ...r }])), []);
      assert.deepEqual(restResults.flatMap((r, i) => (r.status === 200 && r.body === JSON.stringify({ path: `/items/${i}`, bytes: 0 }) ? [] : [{ i, ...r }])), []);
      assert.equal(app.generations, 4);
      // Every call processed exactly once by the app, whatever it refused on the way.
      assert.equal(app.answered, 2 * CALLS);
      assert.deepEqual([...app.answers.values()].filter((n) => n !== 1), []);
      const m = await metrics(sc);
      const retried = retries(m, 'goaway');
      if (how === 'goaway-below') assert.ok(retried > 0, 'the GOAWAYs cut streams in flight');
      assert.equal(retries(m, 'refused_stream'), 0);
      assert.equal(sum(m, 'rpcscope_calls_total', { code: 'OK' }), 2 * CALLS);
      assert.equal(sum(m, 'rpcscope_calls_total', {}), 2 * CALLS);
      assert.equal(sum(m, 'rpcscope_calls_active', {}), 0);
      console.log(`# ${how}: ${2 * CALLS} calls, ${retried} refused by the GOAWAYs and retried, none lost`);
    });
  });
}

describe('an app that refuses streams with REFUSED_STREAM, behind the real binary', () => {
  let app: App;
  let sc: SidecarProcess;
  let session: http2.ClientHttp2Session;

  before(async () => {
    app = new App();
    sc = await startSidecarProcess(['--upstream', await app.listen(), '--upstream-protocol', 'http2', '--log-level', 'info']);
    session = http2.connect(sc.url);
    session.on('error', () => {});
  });
  after(async () => {
    session.close();
    await sc.stop();
    app.close();
  });

  it('retries each refused call once: 20 grpc-js unary calls and 20 REST POSTs of 60 KiB refused once their body was sent all succeed', async () => {
    const client = new grpc.Client(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure());
    const grpcCalls = Array.from({ length: 20 }, (_, i) => {
      const md = new grpc.Metadata();
      md.set('x-call', `g${i}`);
      md.set('x-fault', 'refuse-once');
      return grpcUnary(client, `refused ${i}`, md);
    });
    const body = Buffer.alloc(60 * 1024, 1);
    const restCalls = Array.from({ length: 20 }, (_, i) => h2Call(session, { ':method': 'POST', ':path': `/items/${i}`, 'x-call': `r${i}`, 'x-fault': 'refuse-once-after-body' }, body));
    const grpcResults = await Promise.all(grpcCalls);
    const restResults = await Promise.all(restCalls);
    client.close();
    assert.deepEqual(grpcResults.map((r) => r.code), Array<number>(20).fill(grpc.status.OK));
    assert.deepEqual(grpcResults.map((r) => r.echo), Array.from({ length: 20 }, (_, i) => `refused ${i}`));
    assert.deepEqual(restResults.map((r) => [r.status, JSON.parse(r.body).bytes]), Array<unknown>(20).fill([200, body.length]));
    for (let i = 0; i < 20; i++) {
      assert.equal(app.attempts.get(`g${i}`), 2);
      assert.equal(app.attempts.get(`r${i}`), 2);
    }
    const m = await metrics(sc);
    assert.equal(retries(m, 'refused_stream'), 40);
    assert.equal(retries(m, 'goaway'), 0);
  });

  it('never retries twice: a call refused again reaches its client as REFUSED_STREAM after two attempts', async () => {
    const before = retries(await metrics(sc), 'refused_stream');
    const r = await h2Call(session, { ':method': 'GET', ':path': '/items/1', 'x-call': 'always', 'x-fault': 'refuse-always' });
    assert.equal(r.rstCode, NGHTTP2_REFUSED_STREAM);
    assert.equal(app.attempts.get('always'), 2);
    assert.equal(retries(await metrics(sc), 'refused_stream'), before + 1);
  });

  it('never retries a body larger than it holds (64 KiB): refused once it was all sent, reaches its client refused', async () => {
    const before = retries(await metrics(sc), 'refused_stream');
    const r = await h2Call(session, { ':method': 'POST', ':path': '/upload', 'x-call': 'big', 'x-fault': 'refuse-once-after-body' }, Buffer.alloc(100 * 1024, 2));
    assert.equal(r.rstCode, NGHTTP2_REFUSED_STREAM);
    assert.equal(app.attempts.get('big'), 1);
    assert.equal(retries(await metrics(sc), 'refused_stream'), before);
  });

  it('never retries a call the upstream reset any other way (INTERNAL_ERROR): the app may have acted on it', async () => {
    const before = retries(await metrics(sc), 'refused_stream');
    const r = await h2Call(session, { ':method': 'POST', ':path': '/orders', 'x-call': 'reset', 'x-fault': 'reset-once' }, Buffer.from('{}'));
    assert.equal(r.rstCode, NGHTTP2_INTERNAL_ERROR);
    assert.equal(app.attempts.get('reset'), 1);
    assert.equal(retries(await metrics(sc), 'refused_stream'), before);
  });
});
