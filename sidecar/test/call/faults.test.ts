// Fault containment: an observer that throws on every call and a forwarder that
// throws on marked calls are put into a real sidecar through its seams (the
// observation factory, the forwarders). The faulty calls end cleanly for their
// own callers, every other client is served as before, and /metrics counts each
// fault by where it was raised. A forwarder's fault may also come later, inside
// one of its own event callbacks (here: when the upstream's answer arrives and
// the forwarder writes the caller's response head); that one must be contained
// as well, not reach the process as an uncaught exception.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, startConnectEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { loadConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { Faults } from '../../src/call/faults.ts';
import { createObservation } from '../../src/observe/observation.ts';
import { noopObserver, type Observer } from '../../src/call/observer.ts';
import { FORWARDERS, type Forwarders } from '../../src/proxy/forwarders.ts';
import { startSidecar, type Sidecar } from '../../src/pipeline.ts';

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
}

const FAULT_HEADER = 'x-test-fault';
/** The fault header's value that asks for a fault later, inside the forwarder's upstream 'response' callback. */
const LATER = 'later';

/** `fn`, throwing `message` the first time it is called. */
function throwingOnce<F extends (...args: never[]) => unknown>(fn: F, message: string): F {
  let thrown = false;
  return ((...args: Parameters<F>) => {
    if (!thrown) {
      thrown = true;
      throw new Error(message);
    }
    return fn(...args);
  }) as F;
}

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
    // The forwarders made to throw here are the terminating path's (node:http2 and node:http).
    const result = loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', upstream.url, '--data-plane', 'terminate', '--http1-data-plane', 'terminate'], {});
    if (result.kind !== 'run') throw new Error('unexpected help');
    const config = result.config;
    const throwing: Observer = { ...noopObserver, callEnded: () => { throw new Error('injected observer fault'); } };
    // A fault raised before the forwarder starts the call, on the calls that ask for one.
    const forwarders: Forwarders = {
      ...FORWARDERS,
      h1: (ctx, conn, req, res, closing) => {
        if (req.headers[FAULT_HEADER] === LATER) res.writeHead = throwingOnce(res.writeHead.bind(res), 'injected HTTP/1.1 fault in the upstream response callback');
        else if (req.headers[FAULT_HEADER]) throw new Error('injected HTTP/1.1 forwarder fault');
        FORWARDERS.h1(ctx, conn, req, res, closing);
      },
      h2: (ctx, conn, stream, headers, onClientReset) => {
        if (headers[FAULT_HEADER] === LATER) stream.respond = throwingOnce(stream.respond.bind(stream), 'injected HTTP/2 fault in the upstream response callback');
        else if (headers[FAULT_HEADER]) throw new Error('injected HTTP/2 forwarder fault');
        FORWARDERS.h2(ctx, conn, stream, headers, onClientReset);
      },
    };
    const lines: string[] = [];
    const log = createLogger('error', (l) => void lines.push(l));
    sidecar = await startSidecar(config, log, (known, faults: Faults, router) => {
      const observation = createObservation(config, router, log, {}, known, faults);
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

  /**
   * A gRPC call marked with the fault header beside an unmarked one on the same
   * connection, then a marked REST call and an unmarked one: the marked ones end
   * INTERNAL / 500 for their callers, the others are answered, and the same
   * client is served after.
   */
  async function faultyBesideHealthy(mark: string): Promise<void> {
    const marked = new grpc.Metadata();
    marked.set(FAULT_HEADER, mark);
    const [faulty, healthy] = await Promise.all([echo(client, marked), echo(client)]);
    assert.equal(faulty.err?.code, grpc.status.INTERNAL, 'the faulty call ends INTERNAL for its caller');
    assert.equal(healthy.err, null);
    assert.equal(healthy.res!.message, 'hi');

    const faultyRest = await fetch(`${url}/v1/echo/abc`, { headers: { [FAULT_HEADER]: mark } });
    assert.equal(faultyRest.status, 500);
    assert.equal(await faultyRest.text(), 'rpcscope: internal error\n');
    const rest = await fetch(`${url}/v1/echo/abc`);
    assert.equal(rest.status, 200);
    await rest.text();

    const after = await echo(client);
    assert.equal(after.err, null);
  }

  it('every fault is counted where it was raised, at 0 before the first', async () => {
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    for (const where of ['listener', 'relay', 'forward_h1', 'forward_h2', 'forward_upgrade', 'observer', 'admin']) {
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
    await faultyBesideHealthy('1');
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="forward_h2"}'), 1);
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="forward_h1"}'), 1);
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="listener"}'), 0);
  });

  it('a fault thrown later, in the forwarder\'s own event callback, ends its own call and is counted like the synchronous ones', async () => {
    const before = await (await fetch(`${adminUrl}/metrics`)).text();
    const h2Before = sample(before, 'rpcscope_internal_errors_total{where="forward_h2"}');
    const h1Before = sample(before, 'rpcscope_internal_errors_total{where="forward_h1"}');

    await faultyBesideHealthy(LATER);
    const text = await (await fetch(`${adminUrl}/metrics`)).text();
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="forward_h2"}') - h2Before, 1);
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="forward_h1"}') - h1Before, 1);
    assert.equal(sample(text, 'rpcscope_internal_errors_total{where="listener"}'), 0);
    // Each abandoned call ended once, as its caller saw it; none is left in flight.
    const GRPC = 'rpcscope_calls_total{direction="inbound",protocol="grpc",encoding="proto",method="echo.v1.EchoService/Echo",operation="echo.v1.EchoService/Echo"';
    const REST = 'rpcscope_calls_total{direction="inbound",protocol="rest",encoding="other",method="GET /v1/echo/abc",operation="GET /v1/echo/abc"';
    assert.equal(sample(text, `${GRPC},code="INTERNAL",http_status="200"}`), 1);
    assert.equal(sample(text, `${REST},code="INTERNAL",http_status="500"}`), 1);
    assert.equal(sample(text, 'rpcscope_calls_active{direction="inbound",protocol="grpc",method="echo.v1.EchoService/Echo"}'), 0);
    assert.equal(sample(text, 'rpcscope_calls_active{direction="inbound",protocol="rest",method="GET /v1/echo/abc"}'), 0);
  });
});
