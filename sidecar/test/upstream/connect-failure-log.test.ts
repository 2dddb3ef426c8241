// Failed upstream connections reach the log at warn, once per endpoint per 10 s.
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { noopTracing } from '../../src/call/call-tracing.ts';
import { startSidecar } from '../../src/pipeline.ts';
import { ConnectFailureLog } from '../../src/upstream/connect-failure-log.ts';
import { h1Request, h2Request } from '../support/http-clients.ts';

/** A loopback port nothing listens on any more. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('connect failures', () => {
  it('a refused upstream is one warn line for many calls over HTTP/1.1 and HTTP/2, and the calls get 503 / UNAVAILABLE', async () => {
    const port = await closedPort();
    const lines: Record<string, unknown>[] = [];
    const log = createLogger('warn', (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
    const result = loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', `http://127.0.0.1:${port}`, '--drain-timeout', '1s'], {});
    assert.equal(result.kind, 'run');
    const sidecar = await startSidecar(result.config, log, () => ({ observers: [], tracing: noopTracing, adminHandlers: new Map(), shutdown: async () => {} }));
    const proxy = `http://127.0.0.1:${sidecar.proxyAddress.port}`;
    try {
      for (let i = 0; i < 3; i++) assert.equal((await h1Request(`${proxy}/v1/orders`)).status, 503);
      const grpc = await h2Request(proxy, '/order.v1.OrderService/GetOrder', { method: 'POST', headers: { 'content-type': 'application/grpc', te: 'trailers' }, body: Buffer.alloc(5) });
      assert.equal(grpc.headers['grpc-status'] ?? grpc.trailers['grpc-status'], '14');
    } finally {
      await sidecar.drain();
    }
    const warns = lines.filter((l) => l.msg === 'cannot connect to upstream');
    assert.equal(warns.length, 1, JSON.stringify(lines));
    assert.equal(warns[0]!.level, 'warn');
    assert.equal(warns[0]!.upstream, `127.0.0.1:${port}`);
    assert.equal(warns[0]!.code, 'ECONNREFUSED');
  });

  it('after the window, the next failure is logged with the count held back; endpoints are limited apart', () => {
    let t = 0;
    const lines: Record<string, unknown>[] = [];
    const failures = new ConnectFailureLog(createLogger('warn', (line) => lines.push(JSON.parse(line) as Record<string, unknown>)), () => t);
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    for (; t < 9_000; t += 1000) failures.report('10.0.0.1:80', refused);
    failures.report('10.0.0.2:80', refused);
    t = 10_000;
    failures.report('10.0.0.1:80', refused);
    assert.deepEqual(lines.map((l) => [l.upstream, l.suppressed, l.suppressedSeconds]), [['10.0.0.1:80', undefined, undefined], ['10.0.0.2:80', undefined, undefined], ['10.0.0.1:80', 8, 10]]);
  });
});
