// Fault containment: an observer that throws on every call and a forwarder that
// throws on marked calls are put into a real sidecar through its seams (the
// observation factory, the forwarders). The faulty calls end cleanly for their
// own callers, every other client is served as before, and /metrics counts each
// fault by where it was raised.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, startConnectEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { loadConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { Faults } from '../../src/observe/faults.ts';
import { createObservation } from '../../src/observe/observation.ts';
import { noopObserver, type Observer } from '../../src/observe/observer.ts';
import { FORWARDERS, type Forwarders } from '../../src/proxy/forwarders.ts';
import { startSidecar, type Sidecar } from '../../src/pipeline.ts';

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
}

const FAULT_HEADER = 'x-test-fault';

function echo(client: Client, metadata?: grpc.Metadata): Promise<{ err: grpc.ServiceError | null; res?: EchoResponseObject }> {
  return new Promise((resolve) => {
    const cb = (err: grpc.ServiceError | null, res?: EchoResponseObject): void => resolve({ err, res });
    if (metadata) (client.Echo as unknown as (r: object, m: grpc.Metadata, o: object, c: typeof cb) => void)({ message: 'hi' }, metadata, {}, cb);
    else client.Echo({ message: 'hi' }, {}, cb);
  });
}

function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  assert.ok(line, `no ${series} in:\n${text}`);
  return Number(line.slice(series.length + 1));
}

describe('faults raised while handling one call stay in that call', () => {
  let upstream: Upstream;
  let sidecar: Sidecar;
  let url: string;
  let adminUrl: string;
  let client: Client;

  before(async () => {
    upstream = await startConnectEcho();
    // The forwarders made to throw here are the terminating path's (node:http2).
    const result = loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', upstream.url, '--data-plane', 'terminate'], {});
    if (result.kind !== 'run') throw new Error('unexpected help');
    const config = result.config;
    const throwing: Observer = { ...noopObserver, callEnded: () => { throw new Error('injected observer fault'); } };
    // A fault raised before the forwarder starts the call, on the calls that ask for one.
    const forwarders: Forwarders = {
      ...FORWARDERS,
      h1: (ctx, conn, req, res, closing) => {
        if (req.headers[FAULT_HEADER]) throw new Error('injected HTTP/1.1 forwarder fault');
        FORWARDERS.h1(ctx, conn, req, res, closing);
      },
      h2: (ctx, conn, stream, headers, onClientReset) => {
        if (headers[FAULT_HEADER]) throw new Error('injected HTTP/2 forwarder fault');
        FORWARDERS.h2(ctx, conn, stream, headers, onClientReset);
      },
    };
    const lines: string[] = [];
    const log = createLogger('error', (l) => void lines.push(l));
    sidecar = await startSidecar(config, log, (known, faults: Faults) => {
      const observation = createObservation(config, { routes: undefined, operations: undefined, protos: undefined }, log, {}, known, faults);
      return { ...observation, observers: [...observation.observers, throwing] };
    }, { forwarders });
    url = `http://127.0.0.1:${sidecar.proxyAddress.port}`;
    adminUrl = `http://127.0.0.1:${sidecar.adminAddress.port}`;
    client = new GrpcJsEchoClient(`127.0.0.1:${sidecar.proxyAddress.port}`, grpc.credentials.createInsecure()) as unknown as Client;
  });
  after(async () => {
    client.close();
    await sidecar.drain();
    await upstream.close();
  });

  it('every fault is counted where it was raised, at 0 before the first', async () => {
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    for (const where of ['listener', 'forward_h1', 'forward_h2', 'forward_upgrade', 'observer', 'admin']) {
      assert.equal(sample(text, `rpcscope_internal_errors_total{where="${where}"}`), 0, where);
    }
    assert.equal(sample(text, 'rpcscope_connections_terminated_total{reason="reset_flood"}'), 0);
  });

  it('a throwing observer costs no call: gRPC and REST callers are answered and counted', async () => {
    for (let i = 0; i < 3; i++) {
      const { err, res } = await echo(client);
      assert.equal(err, null);
      assert.equal(res!.message, 'hi');
    }
    const rest = await fetch(`${url}/v1/echo/abc`);
    assert.equal(rest.status, 200);
    await rest.text();
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="observer"}'), 4);
    assert.equal(sample(text, 'rpcscope_calls_total{direction="inbound",protocol="grpc",encoding="proto",method="echo.v1.EchoService/Echo",operation="echo.v1.EchoService/Echo",code="OK",http_status="200"}'), 3);
  });

  it('a throwing forwarder ends its own call (gRPC INTERNAL, REST 500) while the same client keeps being served', async () => {
    const marked = new grpc.Metadata();
    marked.set(FAULT_HEADER, '1');
    const [faulty, healthy] = await Promise.all([echo(client, marked), echo(client)]);
    assert.equal(faulty.err?.code, grpc.status.INTERNAL);
    assert.equal(healthy.err, null);
    assert.equal(healthy.res!.message, 'hi');

    const faultyRest = await fetch(`${url}/v1/echo/abc`, { headers: { [FAULT_HEADER]: '1' } });
    assert.equal(faultyRest.status, 500);
    await faultyRest.text();
    const rest = await fetch(`${url}/v1/echo/abc`);
    assert.equal(rest.status, 200);
    await rest.text();

    const after = await echo(client);
    assert.equal(after.err, null);
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="forward_h2"}'), 1);
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="forward_h1"}'), 1);
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="listener"}'), 0);
  });
});
