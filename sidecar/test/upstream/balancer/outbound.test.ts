// Outbound mode over one client HTTP/2 connection: the balancer, not the
// connection, decides where each call goes.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { startGrpcJsEcho, type Upstream } from '@rpcscope/demo';
import { startTestSidecar, type TestSidecar } from '../../support/sidecar.ts';

/** One empty gRPC message: the echo service answers it with an empty message. */
const EMPTY = Buffer.from([0, 0, 0, 0, 0]);

function call(session: http2.ClientHttp2Session, path = '/echo.v1.EchoService/Echo'): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
    let status: string | undefined;
    req.on('trailers', (t) => (status = String(t['grpc-status'])));
    req.on('response', (h) => (status ??= h['grpc-status'] === undefined ? undefined : String(h['grpc-status'])));
    req.on('error', reject);
    req.on('close', () => resolve(status));
    req.resume();
    req.end(EMPTY);
  });
}

function perUpstream(sc: TestSidecar): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of sc.recorder.ended) m.set(r.upstream, (m.get(r.upstream) ?? 0) + 1);
  return m;
}

describe('outbound balancing over one client connection', () => {
  const pods: Upstream[] = [];
  let endpoints: string;
  before(async () => {
    for (const host of ['127.0.0.2', '127.0.0.3', '127.0.0.4']) pods.push(await startGrpcJsEcho({ host }));
    endpoints = pods.map((p) => `${p.host}:${p.port}`).join(',');
  });
  after(async () => {
    await Promise.all(pods.map((p) => p.close()));
  });

  type ConnectionsView = { downstream: { connections: number; list: { calls: number; share: number }[] }; upstream: { connections: number } };

  async function run(balance: string, calls: number): Promise<{ sc: TestSidecar; spread: number[]; debug: ConnectionsView }> {
    const sc = await startTestSidecar('http://orders.test:80', ['--mode', 'outbound', '--endpoints', endpoints, '--balance', balance]);
    const session = http2.connect(sc.url);
    for (let i = 0; i < calls; i++) assert.equal(await call(session), '0');
    await sc.recorder.waitForEnded(calls);
    const debug = (await (await fetch(`${sc.adminUrl}/debug/connections`)).json()) as ConnectionsView;
    session.close();
    const spread = [...perUpstream(sc).values()].sort((a, b) => a - b);
    return { sc, spread, debug };
  }

  it('round_robin spreads 300 calls on one connection evenly over three endpoints', async () => {
    const { sc, spread, debug } = await run('round_robin', 300);
    await sc.stop();
    assert.deepEqual(spread, [100, 100, 100]);
    assert.equal(debug.downstream.connections, 1);
    assert.equal(debug.downstream.list[0]!.calls, 300);
    assert.equal(debug.downstream.list[0]!.share, 1);
    assert.equal(debug.upstream.connections, 3);
  });

  it('sticky pins the connection to one endpoint', async () => {
    const { sc, spread } = await run('sticky', 60);
    await sc.stop();
    assert.deepEqual(spread, [60]);
  });

  it('least_request and ewma spread too', async () => {
    for (const balance of ['least_request', 'ewma']) {
      const { sc, spread } = await run(balance, 150);
      await sc.stop();
      assert.equal(spread.length, 3, `${balance}: ${spread}`);
      assert.ok(spread.every((n) => n >= 10), `${balance}: ${spread}`);
    }
  });

  it('answers UNAVAILABLE when every endpoint is unreachable, and backs off', async () => {
    const sc = await startTestSidecar('http://orders.test:80', ['--mode', 'outbound', '--endpoints', '127.0.0.1:1,127.0.0.1:2']);
    const session = http2.connect(sc.url);
    for (let i = 0; i < 4; i++) assert.equal(await call(session), '14');
    session.close();
    await sc.stop();
    assert.ok(sc.recorder.ended.every((r) => r.upstreamUnreachable));
  });
});
