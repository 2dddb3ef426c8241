// The route is resolved once, as a call starts, and carried on its record,
// whichever data plane carries the call: the relay and the terminating proxy
// hand observers records whose route is already there, the same interned route
// for every call of one method, and `_OTHER` past --max-methods.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, startGrpcJsEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import type { CallRecord } from '../../src/call/call-record.ts';
import type { Route } from '../../src/route/router.ts';
import { startTestSidecar } from '../support/sidecar.ts';

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  ServerStream(req: Partial<EchoRequestObject>): grpc.ClientReadableStream<EchoResponseObject>;
}

function unary(client: Client): Promise<grpc.ServiceError | null> {
  return new Promise((resolve) => client.Echo({ message: 'x' }, (err) => resolve(err)));
}

function serverStream(client: Client): Promise<number> {
  return new Promise((resolve, reject) => {
    let n = 0;
    const s = client.ServerStream({ message: 's', responses: 3 });
    s.on('data', () => n++);
    s.on('error', reject);
    s.on('end', () => resolve(n));
  });
}

for (const plane of ['relay', 'terminate'] as const) {
  describe(`the call's route on the record (--data-plane ${plane})`, () => {
    let upstream: Upstream;
    before(async () => {
      upstream = await startGrpcJsEcho();
    });
    after(async () => {
      await upstream.close();
    });

    it('is resolved when the call starts, interned per method, and _OTHER past --max-methods', async () => {
      const sc = await startTestSidecar(upstream.url, ['--data-plane', plane, '--max-methods', '1']);
      // What the observers see as each call starts, before any of them could resolve it.
      const atStart: (Route | undefined)[] = [];
      const started = sc.recorder.callStarted;
      sc.recorder.callStarted = (c: CallRecord) => {
        atStart.push(c.route);
        started(c);
      };
      const client = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()) as unknown as Client;
      try {
        assert.equal(await unary(client), null);
        assert.equal(await unary(client), null);
        assert.equal(await serverStream(client), 3);
        const ended = await sc.recorder.waitForEnded(3);
        assert.equal(atStart.length, 3);
        assert.deepEqual(atStart.map((r) => r?.method), ['echo.v1.EchoService/Echo', 'echo.v1.EchoService/Echo', '_OTHER']);
        assert.equal(atStart[0], atStart[1], 'one interned route per method');
        assert.deepEqual(ended.map((r) => r.route), atStart);
        assert.deepEqual(ended.map((r) => r.route?.protocol), ['grpc', 'grpc', 'grpc']);
      } finally {
        client.close();
        await sc.stop();
      }
    });
  });
}
