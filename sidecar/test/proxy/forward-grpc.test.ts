// gRPC through the sidecar, with grpc-js clients, against two different server
// implementations (connect-node and grpc-js): all four shapes, errors, deadlines
// and cancellation arrive as the client library expects them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, REQUESTED_FAILURE, type EchoRequestObject, startConnectEcho, startGrpcJsEcho, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

// The methods proto-loader adds at run time, typed for the calls these tests make.
interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  ServerStream(req: Partial<EchoRequestObject>): grpc.ClientReadableStream<EchoResponseObject>;
  ClientStream(cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientWritableStream<Partial<EchoRequestObject>>;
  BidiStream(): grpc.ClientDuplexStream<Partial<EchoRequestObject>, EchoResponseObject>;
}

function unary(client: Client, req: Partial<EchoRequestObject>, deadlineMs?: number): Promise<{ err: grpc.ServiceError | null; res?: EchoResponseObject }> {
  return new Promise((resolve) => {
    const opts = deadlineMs ? { deadline: Date.now() + deadlineMs } : {};
    client.Echo(req, opts, (err, res) => resolve({ err, res }));
  });
}

function collect(stream: grpc.ClientReadableStream<EchoResponseObject> | grpc.ClientDuplexStream<Partial<EchoRequestObject>, EchoResponseObject>): Promise<{ messages: EchoResponseObject[]; err: grpc.ServiceError | null }> {
  return new Promise((resolve) => {
    const messages: EchoResponseObject[] = [];
    stream.on('data', (m: EchoResponseObject) => messages.push(m));
    stream.on('error', (err: grpc.ServiceError) => resolve({ messages, err }));
    stream.on('end', () => resolve({ messages, err: null }));
  });
}

for (const [impl, start] of [['connect-node', startConnectEcho], ['grpc-js', startGrpcJsEcho]] as const) {
  describe(`gRPC through the sidecar to a ${impl} upstream`, () => {
    let upstream: Upstream;
    let sc: TestSidecar;
    let client: Client;

    before(async () => {
      upstream = await start();
      sc = await startTestSidecar(upstream.url);
      client = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()) as unknown as Client;
    });
    after(async () => {
      client.close();
      await sc.stop();
      await upstream.close();
    });

    // Each test reads the record of its own call: the one on its method's path
    // among the calls started after it began, never the last to end.
    const callOn = (method: string, since: number) => sc.recorder.waitForCall((c) => c.path === `/echo.v1.EchoService/${method}`, { since });

    it('forwards a unary call and records it', async () => {
      const since = sc.recorder.started.length;
      const { err, res } = await unary(client, { message: 'hi', responseSize: 1000 });
      assert.equal(err, null);
      assert.equal(res!.message, 'hi');
      assert.equal(res!.payload.length, 1000);
      const rec = await callOn('Echo', since);
      assert.equal(rec.protocol, 'grpc');
      assert.equal(rec.encoding, 'proto');
      assert.equal(rec.path, '/echo.v1.EchoService/Echo');
      assert.equal(rec.grpcStatus, 0);
      assert.equal(rec.httpStatus, 200);
      assert.equal(rec.requestMessages, 1);
      assert.equal(rec.responseMessages, 1);
      assert.ok(rec.responseBytes > 1000);
      assert.equal(rec.reset, undefined);
      assert.ok(rec.firstResponseMessageTime! >= rec.startTime);
      assert.ok(rec.endTime >= rec.firstResponseMessageTime!);
    });

    it('passes an error status and message through', async () => {
      const since = sc.recorder.started.length;
      const { err } = await unary(client, { message: 'x', failCode: grpc.status.NOT_FOUND });
      assert.equal(err?.code, grpc.status.NOT_FOUND);
      assert.equal(err?.details, REQUESTED_FAILURE);
      const rec = await callOn('Echo', since);
      assert.equal(rec.grpcStatus, grpc.status.NOT_FOUND);
    });

    it('forwards a server stream message by message', async () => {
      const since = sc.recorder.started.length;
      const { messages, err } = await collect(client.ServerStream({ message: 's', responses: 5 }));
      assert.equal(err, null);
      assert.deepEqual(messages.map((m) => m.index), [0, 1, 2, 3, 4]);
      const rec = await callOn('ServerStream', since);
      assert.equal(rec.responseMessages, 5);
      assert.equal(rec.grpcStatus, 0);
    });

    it('forwards a client stream', async () => {
      const since = sc.recorder.started.length;
      const res = await new Promise<{ err: grpc.ServiceError | null; res?: EchoResponseObject }>((resolve) => {
        const call = client.ClientStream((err: grpc.ServiceError | null, r?: EchoResponseObject) => resolve({ err, res: r }));
        for (const m of ['a', 'b', 'c']) call.write({ message: m });
        call.end();
      });
      assert.equal(res.err, null);
      assert.match(res.res!.message, /a.*b.*c/);
      const rec = await callOn('ClientStream', since);
      assert.equal(rec.requestMessages, 3);
      assert.equal(rec.responseMessages, 1);
    });

    it('forwards a bidi stream in both directions at once', async () => {
      const call = client.BidiStream();
      const got: string[] = [];
      const done = collect(call);
      // Each answer arrives before the next request is written: nothing waits for the end.
      for (const m of ['one', 'two', 'three']) {
        const answered = new Promise<void>((resolve) => call.once('data', (r: EchoResponseObject) => { got.push(r.message); resolve(); }));
        call.write({ message: m });
        await answered;
      }
      call.end();
      const { err } = await done;
      assert.equal(err, null);
      assert.deepEqual(got, ['one', 'two', 'three']);
    });

    it('lets a deadline expire as the client set it', async () => {
      const since = sc.recorder.started.length;
      const started = Date.now();
      // The upstream would answer after 30 s: a call the 200 ms deadline did not end
      // would still be open long past the bound, which a busy machine stays far from.
      const { err } = await unary(client, { message: 'slow', delayMs: 30_000 }, 200);
      assert.equal(err?.code, grpc.status.DEADLINE_EXCEEDED);
      assert.ok(Date.now() - started < 10_000, `ended after ${Date.now() - started} ms`);
      const rec = await callOn('Echo', since);
      assert.equal(rec.deadline?.header, 'grpc-timeout');
      assert.ok(rec.deadline!.ms! > 0 && rec.deadline!.ms! <= 200, `deadline ${rec.deadline?.ms}`);
      // grpc-js cancels with RST_STREAM(CANCEL) when its deadline passes.
      assert.deepEqual(rec.reset, { side: 'client', code: 8 });
    });

    it('passes a client cancellation on as a reset', async () => {
      const since = sc.recorder.started.length;
      const call = client.ServerStream({ message: 'c', responses: 100, delayMs: 100 });
      const done = collect(call);
      await new Promise((r) => call.once('data', r));
      call.cancel();
      const { err } = await done;
      assert.equal(err?.code, grpc.status.CANCELLED);
      const rec = await callOn('ServerStream', since);
      assert.equal(rec.reset?.side, 'client');
      assert.equal(rec.reset?.code, 8);
      assert.ok(rec.responseMessages >= 1 && rec.responseMessages < 100);
    });
  });
}
