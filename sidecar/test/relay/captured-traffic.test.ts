// The frame reader and the HPACK decoder on traffic captured from real peers:
// a grpc-js client and a grpc-js server (both nghttp2 underneath: Huffman
// literals, dynamic-table hits, trailers) talking through a recording TCP hop.
// What the decoder reads must be what the peers sent and saw, read whole and
// with the capture split at every byte.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, startGrpcJsEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { FrameParser } from '../../src/relay/frame-parser.ts';
import { Flag } from '../../src/h2/frame-types.ts';
import { HpackDecoder } from '../../src/relay/hpack-decoder.ts';

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  ServerStream(req: Partial<EchoRequestObject>, md: grpc.Metadata): grpc.ClientReadableStream<EchoResponseObject>;
}

/** A TCP hop that records each direction's bytes. */
async function startRecorder(target: number): Promise<{ port: number; up: Buffer[]; down: Buffer[]; close(): void }> {
  const up: Buffer[] = [];
  const down: Buffer[] = [];
  const sockets: net.Socket[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    sockets.push(client, upstream);
    client.on('data', (d: Buffer) => {
      up.push(Buffer.from(d));
      upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      down.push(Buffer.from(d));
      client.write(d);
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, up, down, close: () => { for (const s of sockets) s.destroy(); server.close(); } };
}

type Block = { stream: number; endStream: boolean; headers: [string, string][] };

/** Every header block of one direction, decoded, with the bytes fed in pieces cut at `cuts`. */
function decodeDirection(bytes: Buffer, preface: boolean, cuts: number[] = []): Block[] {
  const hpack = new HpackDecoder();
  const blocks: Block[] = [];
  const parser = new FrameParser({
    headers: (stream, flags, block) => {
      const flat = hpack.decode(block);
      const headers: [string, string][] = [];
      for (let i = 0; i < flat.length; i += 2) headers.push([flat[i]!, flat[i + 1]!]);
      blocks.push({ stream, endStream: (flags & Flag.END_STREAM) !== 0, headers });
    },
    data() {},
    rstStream() {},
    settings() {},
    goaway() {},
    windowUpdate() {},
    ping() {},
    other() {},
  }, preface);
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    parser.push(bytes.subarray(at, cut));
    at = cut;
  }
  return blocks;
}

const get = (b: Block, name: string): string | undefined => b.headers.find(([n]) => n === name)?.[1];

describe('frame reader and HPACK decoder on captured grpc-js traffic', () => {
  let upstream: Upstream;
  let rec: Awaited<ReturnType<typeof startRecorder>>;
  const paths: string[] = [];
  before(async () => {
    upstream = await startGrpcJsEcho();
    rec = await startRecorder(Number(new URL(upstream.url).port));
    const client = new GrpcJsEchoClient(`127.0.0.1:${rec.port}`, grpc.credentials.createInsecure()) as unknown as Client;
    for (let i = 0; i < 12; i++) {
      const md = new grpc.Metadata();
      md.set('x-request-tag', `tag-${i % 3}-${i}`);
      md.set('x-trace-bin', Buffer.from([i, 255, 0, 128]));
      if (i % 4 === 3) {
        paths.push('/echo.v1.EchoService/ServerStream');
        await new Promise<void>((resolve, reject) => {
          const s = client.ServerStream({ message: 's', responses: 3 }, md);
          s.on('data', () => {});
          s.on('end', resolve);
          s.on('error', reject);
        });
      } else {
        paths.push('/echo.v1.EchoService/Echo');
        await new Promise<void>((resolve) => client.Echo({ message: `m${i}`, failCode: i % 4 === 2 ? grpc.status.NOT_FOUND : 0 }, md, () => resolve()));
      }
    }
    client.close();
    await new Promise((r) => setTimeout(r, 100));
  });
  after(async () => {
    rec.close();
    await upstream.close();
  });

  it('reads every request header block as the client sent it', () => {
    const requests = decodeDirection(Buffer.concat(rec.up), true);
    assert.deepEqual(requests.map((b) => get(b, ':path')), paths);
    requests.forEach((b, i) => {
      assert.equal(get(b, ':method'), 'POST');
      assert.equal(get(b, 'content-type'), 'application/grpc');
      assert.equal(get(b, 'x-request-tag'), `tag-${i % 3}-${i}`);
      assert.equal(Buffer.from(get(b, 'x-trace-bin')!, 'base64').toString('hex'), Buffer.from([i, 255, 0, 128]).toString('hex'));
    });
  });

  it('reads every response and trailer block as the server sent it', () => {
    const responses = decodeDirection(Buffer.concat(rec.down), false);
    const trailers = responses.filter((b) => b.endStream);
    assert.equal(trailers.length, paths.length);
    assert.deepEqual(trailers.map((b) => get(b, 'grpc-status')), paths.map((_, i) => (i % 4 === 2 ? '5' : '0')));
    assert.ok(responses.filter((b) => !b.endStream).every((b) => get(b, ':status') === '200'));
  });

  it('reads the same with the capture split at every byte', () => {
    for (const [bytes, preface] of [[Buffer.concat(rec.up), true], [Buffer.concat(rec.down), false]] as const) {
      const whole = decodeDirection(bytes, preface);
      const everyByte = decodeDirection(bytes, preface, Array.from({ length: bytes.length - 1 }, (_, i) => i + 1));
      assert.deepEqual(everyByte, whole);
    }
  });
});
