// Connect, gRPC-Web and gRPC through the sidecar with connect-node clients, over
// HTTP/1.1 and HTTP/2: each protocol's status reaches the client and the record.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Code, ConnectError, createClient, type Client, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { EchoService, REQUESTED_FAILURE, startConnectEcho, type Upstream } from '@rpcscope/demo';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

type Variant = { name: string; protocol: string; encoding: string; httpVersion: '1.1' | '2'; transport: (baseUrl: string) => Transport };

const VARIANTS: Variant[] = [
  { name: 'Connect JSON over HTTP/1.1', protocol: 'connect', encoding: 'json', httpVersion: '1.1', transport: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false }) },
  { name: 'Connect binary over HTTP/2', protocol: 'connect', encoding: 'proto', httpVersion: '2', transport: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: '2', useBinaryFormat: true }) },
  { name: 'gRPC-Web over HTTP/1.1', protocol: 'grpc_web', encoding: 'proto', httpVersion: '1.1', transport: (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: '1.1' }) },
  { name: 'gRPC-Web JSON over HTTP/2', protocol: 'grpc_web', encoding: 'json', httpVersion: '2', transport: (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: '2', useBinaryFormat: false }) },
  { name: 'gRPC (connect-node client)', protocol: 'grpc', encoding: 'proto', httpVersion: '2', transport: (baseUrl) => createGrpcTransport({ baseUrl }) },
];

describe('Connect, gRPC-Web and gRPC through the sidecar', () => {
  let upstream: Upstream;
  let sc: TestSidecar;
  before(async () => {
    upstream = await startConnectEcho();
    sc = await startTestSidecar(upstream.url);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  for (const v of VARIANTS) {
    describe(v.name, () => {
      let client: Client<typeof EchoService>;
      before(() => {
        client = createClient(EchoService, v.transport(sc.url));
      });

      // Each test reads the record of its own call: the one on its method's path
      // among the calls started after it began, never the last to end.
      const callOn = (method: string, since: number) => sc.recorder.waitForCall((c) => c.path === `/echo.v1.EchoService/${method}`, { since });

      it('forwards a unary call', async () => {
        const since = sc.recorder.started.length;
        const res = await client.echo({ message: 'hello', responseSize: 300 });
        assert.equal(res.message, 'hello');
        assert.equal(res.payload.length, 300);
        const rec = await callOn('Echo', since);
        assert.deepEqual([rec.protocol, rec.encoding, rec.httpVersion], [v.protocol, v.encoding, v.httpVersion]);
        assert.equal(rec.path, '/echo.v1.EchoService/Echo');
        if (v.protocol === 'connect') assert.equal(rec.connectCode, undefined);
        else assert.equal(rec.grpcStatus, 0);
      });

      it('passes an error code through, and records it where the protocol puts it', async () => {
        const since = sc.recorder.started.length;
        await assert.rejects(client.echo({ message: 'x', failCode: Code.PermissionDenied }), (err: unknown) => {
          const e = ConnectError.from(err);
          return e.code === Code.PermissionDenied && e.rawMessage === REQUESTED_FAILURE;
        });
        const rec = await callOn('Echo', since);
        if (v.protocol === 'connect') {
          assert.equal(rec.connectCode, 'permission_denied');
          assert.equal(rec.httpStatus, 403);
        } else {
          assert.equal(rec.grpcStatus, Code.PermissionDenied);
        }
      });

      it('forwards a server stream and counts its messages', async () => {
        const since = sc.recorder.started.length;
        const got: number[] = [];
        for await (const r of client.serverStream({ message: 's', responses: 4 })) got.push(r.index);
        assert.deepEqual(got, [0, 1, 2, 3]);
        const rec = await callOn('ServerStream', since);
        assert.equal(rec.responseMessages, 4);
        assert.equal(rec.requestMessages, 1);
        if (v.protocol === 'connect') {
          assert.equal(rec.connectEndStream, true);
          assert.equal(rec.connectCode, undefined);
        } else {
          assert.equal(rec.grpcStatus, 0);
        }
      });

      it('reads an error that ends a stream after some messages', async () => {
        const since = sc.recorder.started.length;
        const got: number[] = [];
        await assert.rejects(
          (async () => {
            for await (const r of client.serverStream({ message: 's', responses: 2, failCode: Code.ResourceExhausted })) got.push(r.index);
          })(),
          (err: unknown) => ConnectError.from(err).code === Code.ResourceExhausted,
        );
        const rec = await callOn('ServerStream', since);
        assert.equal(rec.responseMessages, got.length);
        if (v.protocol === 'connect') assert.equal(rec.connectCode, 'resource_exhausted');
        else assert.equal(rec.grpcStatus, Code.ResourceExhausted);
      });
    });
  }

  it('carries a Connect deadline header into the record', async () => {
    const since = sc.recorder.started.length;
    const client = createClient(EchoService, createConnectTransport({ baseUrl: sc.url, httpVersion: '1.1' }));
    await assert.rejects(client.echo({ message: 'slow', delayMs: 1000 }, { timeoutMs: 100 }), (err: unknown) => ConnectError.from(err).code === Code.DeadlineExceeded);
    const rec = await sc.recorder.waitForCall((c) => c.path === '/echo.v1.EchoService/Echo', { since });
    assert.equal(rec.deadline?.header, 'connect-timeout-ms');
    assert.equal(rec.deadline?.ms, 100);
  });
});
