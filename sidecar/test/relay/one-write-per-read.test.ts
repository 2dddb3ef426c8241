// What the relays write from one read goes out in one write per direction, seen
// from the peers of the real binary: one write of a few hundred octets on
// loopback reaches the reader as one segment, read whole at once, where writes
// of its pieces one by one could be read apart. (The relays' system calls per
// call are test/bench/relay-syscalls.ts's figure.)
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { FLAG, FRAME, PREFACE, frame, readFrames, requestBlock, settings } from '../../../test/support/h2-frames.ts';
import { startSidecarProcess, type SidecarProcess } from '../../../test/support/sidecar-process.ts';

/** Reads a socket's 'data' events one by one: each is one read of the socket. */
class Reads {
  private readonly chunks: Buffer[] = [];
  private wake: (() => void) | undefined;
  constructor(socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.chunks.push(d);
      this.wake?.();
    });
  }

  /** The reads that come until the bytes read since the call satisfy `done` (5 s at most). */
  async until(done: (bytes: Buffer) => boolean): Promise<Buffer[]> {
    const start = this.chunks.length;
    const deadline = Date.now() + 5000;
    for (;;) {
      const reads = this.chunks.slice(start);
      if (done(Buffer.concat(reads))) return reads;
      if (Date.now() > deadline) throw new Error(`not done after 5 s: ${reads.length} reads, ${Buffer.concat(reads).length} octets`);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  }
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

describe('HTTP/1.1 relay: one write per read', () => {
  const BODY = 'x'.repeat(700);
  let app: net.Server;
  /** The reads of each request the app received, in order. */
  const requestReads: Buffer[][] = [];
  let sc: SidecarProcess;

  before(async () => {
    // An app that answers each request (a POST with a 5-octet body) with its head and body in one write.
    app = net.createServer((socket) => {
      let pending: Buffer[] = [];
      socket.on('data', (d: Buffer) => {
        pending.push(d);
        const bytes = Buffer.concat(pending);
        const end = bytes.indexOf('\r\n\r\n');
        if (end < 0 || bytes.length < end + 4 + 5) return;
        requestReads.push(pending);
        pending = [];
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${BODY.length}\r\n\r\n${BODY}`);
      });
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    const { port } = app.address() as AddressInfo;
    sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${port}`, '--upstream-protocol', 'http1', '--http1-data-plane', 'relay', '--log-level', 'info']);
  });

  after(async () => {
    await sc?.stop();
    app?.close();
  });

  it('passes a head and the body read with it in one write each way: the client reads each answer whole at once, the app each request', async () => {
    const client = await connect(sc.port);
    const reads = new Reads(client);
    const answerReads: number[] = [];
    for (let i = 0; i < 20; i++) {
      client.write(`POST /r${i} HTTP/1.1\r\nhost: app\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\nhello`);
      const got = await reads.until((b) => b.toString('latin1').endsWith(BODY));
      assert.match(Buffer.concat(got).toString('latin1'), /^HTTP\/1\.1 200 OK\r\n/);
      answerReads.push(got.length);
    }
    client.destroy();
    assert.deepEqual(answerReads, Array(20).fill(1), 'reads per answer at the client');
    // The first request went out while the app's connection was being made; the others on it, kept.
    assert.deepEqual(requestReads.slice(1).map((r) => r.length), Array(19).fill(1), 'reads per request at the app');
  });
});

describe('HTTP/2 relay: one write per read', () => {
  let sc: SidecarProcess;

  before(async () => {
    // A port nothing listens on: the relay answers each call itself (UNAVAILABLE) for a moment, then sends GOAWAY.
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${port}`, '--upstream-protocol', 'http2', '--data-plane', 'relay', '--log-level', 'info']);
  });

  after(async () => {
    await sc?.stop();
  });

  it('writes the frames answering one read of the client in one write: the SETTINGS ACK and three answers come in one read', async () => {
    const client = await connect(sc.port);
    const reads = new Reads(client);
    client.write(Buffer.concat([PREFACE, settings()]));
    // The relay's SETTINGS and its ACK of the client's, once it knows the upstream cannot be reached.
    await reads.until((b) => readFrames(b).filter((f) => f.type === FRAME.SETTINGS).length === 2);
    // Three calls (each answered HEADERS then DATA) and a SETTINGS, in one write.
    const calls = [1, 3, 5].map((id) => frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, requestBlock(`/r${id}`)));
    client.write(Buffer.concat([settings(), ...calls]));
    const ended = (b: Buffer): boolean => readFrames(b).filter((f) => f.flags & FLAG.END_STREAM && f.type !== FRAME.SETTINGS).length === 3;
    const got = await reads.until(ended);
    client.destroy();
    const frames = readFrames(Buffer.concat(got));
    assert.deepEqual(frames.filter((f) => f.type === FRAME.SETTINGS).map((f) => f.flags), [FLAG.ACK]);
    assert.deepEqual([...new Set(frames.filter((f) => f.type === FRAME.HEADERS).map((f) => f.streamId))], [1, 3, 5]);
    assert.equal(got.length, 1, `reads of the answer: ${got.map((r) => r.length).join(', ')} octets`);
  });
});
