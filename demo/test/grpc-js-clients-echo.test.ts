// @grpc/grpc-js clients against both echo servers: the four call shapes,
// requested failures, deadlines, and a client cancel the server must survive.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, REQUESTED_FAILURE, startConnectEcho, startGrpcJsEcho } from '../src/index.ts';
import type { EchoRequestObject, EchoResponseObject, Upstream } from '../src/index.ts';

type Req = Partial<EchoRequestObject>;
type Res = EchoResponseObject;

/** The dynamic client proto-loader builds, typed as the calls are used here. */
type EchoClient = grpc.Client & {
  Echo(req: Req, options: grpc.CallOptions, callback: (err: grpc.ServiceError | null, res?: Res) => void): grpc.ClientUnaryCall;
  ServerStream(req: Req, options?: grpc.CallOptions): grpc.ClientReadableStream<Res>;
  ClientStream(callback: (err: grpc.ServiceError | null, res?: Res) => void): grpc.ClientWritableStream<Req>;
  BidiStream(): grpc.ClientDuplexStream<Req, Res>;
};

function unary(client: EchoClient, req: Req, options: grpc.CallOptions = {}): Promise<Res> {
  return new Promise((resolve, reject) => client.Echo(req, options, (err, res) => (err ? reject(err) : resolve(res!))));
}

function readAll(stream: grpc.ClientReadableStream<Res>): Promise<{ responses: Res[]; error?: grpc.ServiceError }> {
  return new Promise((resolve) => {
    const responses: Res[] = [];
    stream.on('data', (r: Res) => responses.push(r));
    stream.on('error', (error: grpc.ServiceError) => resolve({ responses, error }));
    stream.on('end', () => resolve({ responses }));
  });
}

const servers = [
  { name: 'connect-node echo', start: startConnectEcho },
  { name: 'grpc-js echo', start: startGrpcJsEcho },
];

for (const server of servers) {
  describe(`grpc-js client against ${server.name}`, () => {
    let upstream: Upstream;
    let client: EchoClient;
    before(async () => {
      upstream = await server.start();
      client = new GrpcJsEchoClient(`${upstream.host}:${upstream.port}`, grpc.credentials.createInsecure()) as unknown as EchoClient;
    });
    after(async () => {
      client.close();
      await upstream.close();
    });

    test('unary', async () => {
      const res = await unary(client, { message: 'hi', responseSize: 4 });
      assert.equal(res.message, 'hi');
      assert.equal(res.payload.length, 4);
    });

    test('server stream', async () => {
      const { responses, error } = await readAll(client.ServerStream({ message: 's', responses: 4 }));
      assert.equal(error, undefined);
      assert.deepEqual(responses.map((r) => r.index), [0, 1, 2, 3]);
    });

    test('client stream', async () => {
      const res = await new Promise<Res>((resolve, reject) => {
        const call = client.ClientStream((err, r) => (err ? reject(err) : resolve(r!)));
        for (const message of ['a', 'b']) call.write({ message });
        call.end();
      });
      assert.deepEqual([res.message, res.index], ['a,b', 2]);
    });

    test('bidi stream', async () => {
      const call = client.BidiStream();
      const done = readAll(call);
      for (const message of ['p', 'q']) call.write({ message });
      call.end();
      const { responses, error } = await done;
      assert.equal(error, undefined);
      assert.deepEqual(responses.map((r) => [r.message, r.index]), [['p', 0], ['q', 1]]);
    });

    test('fail_code gives that status and "requested failure"', async () => {
      await assert.rejects(unary(client, { failCode: grpc.status.INVALID_ARGUMENT }), (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
        assert.equal(err.details, REQUESTED_FAILURE);
        return true;
      });
    });

    test('server stream fails after its messages', async () => {
      const { responses, error } = await readAll(client.ServerStream({ responses: 1, failCode: grpc.status.INTERNAL }));
      assert.equal(responses.length, 1);
      assert.equal(error?.code, grpc.status.INTERNAL);
    });

    test('a deadline shorter than delay_ms ends in DEADLINE_EXCEEDED', async () => {
      await assert.rejects(unary(client, { delayMs: 2000 }, { deadline: Date.now() + 50 }), (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.DEADLINE_EXCEEDED);
        return true;
      });
    });

    test('a client cancel mid-stream leaves the server serving', async () => {
      const call = client.ServerStream({ responses: 1000, delayMs: 5 });
      const outcome = readAll(call);
      await new Promise((resolve) => call.once('data', resolve));
      call.cancel();
      assert.equal((await outcome).error?.code, grpc.status.CANCELLED);
      assert.equal((await unary(client, { message: 'still here' })).message, 'still here');
    });
  });
}
