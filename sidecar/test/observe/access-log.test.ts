// The access log through the real sidecar: calls proxied to a real HTTP server,
// the lines read back from the file the operator named.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { loadStartFiles } from '../../src/config/start-files.ts';
import { createLogger } from '../../src/log.ts';
import { createAccessLog } from '../../src/observe/access-log.ts';
import { createMetricsObserver } from '../../src/observe/metrics-observer.ts';
import { Router } from '../../src/route/router.ts';
import { createObservation } from '../../src/observe/observation.ts';
import { noopObserver } from '../../src/call/observer.ts';
import { startSidecar } from '../../src/pipeline.ts';
import { h1Request } from '../support/http-clients.ts';
import { endedCall } from './records.ts';

async function upstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(req.url?.startsWith('/v1/missing') ? 404 : 200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

describe('access log', () => {
  it('writes one JSON line per call with the metrics labels, duration, bytes, upstream and deadline', async () => {
    const app = await upstream();
    const file = join(mkdtempSync(join(tmpdir(), 'rpcscope-access-')), 'access.log');
    const result = loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', app.url, '--log-level', 'silent', '--drain-timeout', '1s', '--access-log', file], {});
    assert.equal(result.kind, 'run');
    const config = result.config;
    const log = createLogger('silent');
    const files = loadStartFiles(config);
    const sidecar = await startSidecar(config, log, (known, _faults, router) => createObservation(config, router, log, {}, known), { files });
    const proxy = `http://127.0.0.1:${sidecar.proxyAddress.port}`;
    try {
      assert.equal((await h1Request(`${proxy}/v1/orders/42`)).status, 200);
      assert.equal((await h1Request(`${proxy}/v1/missing/7`, { method: 'POST', body: Buffer.from('{"a":1}'), headers: { 'content-type': 'application/json' } })).status, 404);
    } finally {
      await sidecar.drain();
      await app.close();
    }
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, 2);
    const [get, post] = lines as [Record<string, unknown>, Record<string, unknown>];
    assert.deepEqual(
      { ...get, start_time: typeof get.start_time, duration_ms: typeof get.duration_ms },
      {
        start_time: 'string', direction: 'inbound', protocol: 'rest', encoding: 'other', method: 'GET /v1/orders/{id}', operation: 'GET /v1/orders/{id}',
        code: 'OK', http_status: '200', duration_ms: 'number', request_bytes: 0, response_bytes: 11, upstream: app.url.slice(7),
        reset_side: '', reset_code: '', deadline_ms: null, sample_rate: 1,
      },
    );
    assert.ok(Math.abs(Date.parse(get.start_time as string) - Date.now()) < 10_000, String(get.start_time));
    assert.ok((get.duration_ms as number) > 0);
    assert.deepEqual([post.method, post.code, post.http_status, post.request_bytes, post.encoding], ['POST /v1/missing/{id}', 'NOT_FOUND', '404', 7, 'json']);
  });

  it('is the no-op observer when off or sampled at 0, and samples about the share asked for', async () => {
    const metrics = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} });
    const route = (call: Parameters<typeof metrics.route>[0]) => metrics.route(call);
    const log = createLogger('silent');
    assert.equal(createAccessLog({ destination: 'off', sample: 1, route, log }).observer, noopObserver);
    assert.equal(createAccessLog({ destination: 'stdout', sample: 0, route, log }).observer, noopObserver);

    const out = new PassThrough();
    let text = '';
    out.on('data', (d: Buffer) => (text += d.toString()));
    const sampled = createAccessLog({ destination: 'stdout', sample: 0.25, route, log, stdout: out });
    for (let i = 0; i < 4000; i++) sampled.observer.callEnded(endedCall({ httpStatus: 200, grpcStatus: 4, deadline: { header: 'grpc-timeout', raw: '5m', ms: 5 }, reset: { side: 'upstream', code: 8 } }));
    await sampled.close();
    const lines = text.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(lines.length > 800 && lines.length < 1200, `${lines.length} of 4000 at 0.25`);
    assert.deepEqual(
      [lines[0]!.method, lines[0]!.code, lines[0]!.reset_side, lines[0]!.reset_code, lines[0]!.deadline_ms, lines[0]!.sample_rate, lines[0]!.duration_ms],
      ['order.v1.OrderService/GetOrder', 'DEADLINE_EXCEEDED', 'upstream', 'CANCEL', 5, 0.25, 10],
    );
    await metrics.shutdown();
  });
});
