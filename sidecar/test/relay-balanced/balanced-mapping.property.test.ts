// Frame mapping across the balanced relay's two hops, as a property: whatever
// mix of calls runs at once over one client connection (bodies from none to
// several times every window, both ways, unary and server streams), with the
// bytes cut at random on both hops, every call's answer arrives whole and once,
// no stream is left open on either hop, and the windows come back whole — a
// last call as large as the client's whole connection window still goes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { GrpcJsEchoClient, deterministicBytes, startGrpcJsEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';
import { startSplittingHop, type SplittingHop } from '../support/splitting-hop.ts';

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  ServerStream(req: Partial<EchoRequestObject>): grpc.ClientReadableStream<EchoResponseObject>;
}

/** One call of a mix: a unary call echoing `request` octets or answering `response`, or a stream of `messages` answers. */
type Planned = { kind: 'unary'; request: number; response: number } | { kind: 'stream'; messages: number; response: number };

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

function run(c: Client, p: Planned, i: number): Promise<string> {
  if (p.kind === 'unary') {
    const payload = deterministicBytes(p.request, i);
    return new Promise((resolve, reject) =>
      c.Echo({ message: `u${i}`, payload, responseSize: p.response }, (err, res) => {
        if (err) return reject(err);
        const expected = p.response > 0 ? deterministicBytes(p.response) : payload;
        resolve(res!.message === `u${i}` && sha(res!.payload) === sha(expected) ? 'whole' : `call ${i}: a different answer`);
      }),
    );
  }
  return new Promise((resolve, reject) => {
    let n = 0;
    let whole = true;
    const expected = sha(deterministicBytes(p.response));
    const s = c.ServerStream({ message: `s${i}`, responses: p.messages, responseSize: p.response });
    s.on('data', (r: EchoResponseObject) => {
      if (r.index !== n++ || sha(r.payload) !== expected) whole = false;
    });
    s.on('error', reject);
    s.on('end', () => resolve(whole && n === p.messages ? 'whole' : `stream ${i}: ${n} of ${p.messages} answers, whole ${whole}`));
  });
}

const planned: fc.Arbitrary<Planned> = fc.oneof(
  fc.record({ kind: fc.constant('unary' as const), request: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2_000 }), fc.integer({ min: 60_000, max: 1_500_000 })), response: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 700_000 })) }),
  fc.record({ kind: fc.constant('stream' as const), messages: fc.integer({ min: 1, max: 30 }), response: fc.integer({ min: 1, max: 120_000 }) }),
);

describe('balanced relay: frame mapping as a property', () => {
  let pod: Upstream;
  before(async () => {
    pod = await startGrpcJsEcho({ host: '127.0.0.2' });
  });
  after(async () => {
    await pod.close();
  });

  it('delivers every call of any mix whole, once, with the bytes cut anywhere, and leaves every window whole', { timeout: 240_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(planned, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 1_000_000 }), async (mix, seed) => {
        let upSplit: SplittingHop | undefined;
        let downSplit: SplittingHop | undefined;
        let sc: TestSidecar | undefined;
        let c: Client | undefined;
        try {
          upSplit = await startSplittingHop(pod.port, { seed, host: pod.host, maxPiece: 2_000, yieldEvery: 8 });
          sc = await startTestSidecar('http://orders.test:80', ['--mode', 'outbound', '--outbound-data-plane', 'relay', '--upstream-protocol', 'http2', '--endpoints', `${pod.host}:${upSplit.port}`]);
          downSplit = await startSplittingHop(sc.port, { seed: seed + 1, maxPiece: 2_000, yieldEvery: 8 });
          c = new GrpcJsEchoClient(`127.0.0.1:${downSplit.port}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 << 20 }) as unknown as Client;
          const results = await Promise.all(mix.map((p, i) => run(c!, p, i)));
          assert.deepEqual(results, mix.map(() => 'whole'));
          // The windows of both hops came back whole: a call of 1 MiB each way (the client's whole connection window) still goes.
          assert.equal(await run(c, { kind: 'unary', request: 1024 * 1024, response: 0 }, 99), 'whole');
          const ended = await sc.recorder.waitForEnded(mix.length + 1);
          assert.ok(ended.every((r) => r.grpcStatus === 0 && r.reset === undefined), JSON.stringify(ended.map((r) => [r.grpcStatus, r.reset])));
        } finally {
          c?.close();
          await sc?.stop();
          downSplit?.close();
          upSplit?.close();
        }
      }),
      { numRuns: 12, seed: 20261204 },
    );
  });
});
