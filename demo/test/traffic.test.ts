// The traffic generator against a real order service: every protocol used,
// errors among the outcomes, and the run bounded in count and time.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startOrderService } from '../src/index.ts';
import type { Upstream } from '../src/index.ts';
import { TRAFFIC_PROTOCOLS, runTraffic } from '../src/traffic.ts';
import type { TrafficResult } from '../src/traffic.ts';
import { parseTrafficArgs } from '../src/traffic-args.ts';

function sumOfProtocols(result: TrafficResult): number {
  return Object.values(result.byProtocol).reduce((sum, c) => sum + c.calls, 0);
}

describe('runTraffic', () => {
  let upstream: Upstream;
  before(async () => {
    upstream = await startOrderService({ podName: 'traffic-test' });
  });
  after(() => upstream.close());

  test('sends a mix through every protocol, with errors, within its duration', async () => {
    const started = performance.now();
    const result = await runTraffic({ target: upstream.url, durationMs: 1200, rps: 80, seed: 42 });
    // Calls still open at the end may take up to their own deadline (3 s at most in the scenarios).
    assert.ok(performance.now() - started < 1200 + 3500);
    assert.equal(result.calls, sumOfProtocols(result));
    assert.ok(result.calls + result.skipped >= 60, `only ${result.calls} calls`);
    for (const protocol of TRAFFIC_PROTOCOLS) {
      const counts = result.byProtocol[protocol];
      assert.ok(counts.calls > 0, `${protocol} got no calls`);
      assert.ok(counts.ok > 0, `${protocol} had no successful call: ${JSON.stringify(counts.codes)}`);
      assert.equal(counts.ok + counts.failed, counts.calls);
    }
    const failed = Object.values(result.byProtocol).reduce((sum, c) => sum + c.failed, 0);
    assert.ok(failed > 0, 'no errors in the mix');
    assert.ok((result.byScenario.watch ?? 0) > 0, 'no server streams in the mix');
  });

  test('stops at maxCalls and uses only the protocols in the mix', async () => {
    const result = await runTraffic({ target: upstream.url, durationMs: 5000, rps: 200, maxCalls: 25, mix: { rest: 1, 'grpc-js': 1 } });
    assert.equal(result.calls + result.skipped, 25);
    assert.equal(result.byProtocol.grpc.calls + result.byProtocol.connect.calls + result.byProtocol['grpc-web'].calls, 0);
  });

  test('an aborted signal ends the run early', async () => {
    const started = performance.now();
    const result = await runTraffic({ target: upstream.url, durationMs: 60_000, rps: 20, signal: AbortSignal.timeout(300) });
    assert.ok(performance.now() - started < 2000);
    assert.ok(result.calls < 20);
  });

  test('bad options are refused with the value and what is allowed', async () => {
    await assert.rejects(runTraffic({ target: 'nope' }), /target "nope" is not a URL/);
    await assert.rejects(runTraffic({ target: upstream.url, rps: 0 }), /rps 0: expected 0 < rps/);
    await assert.rejects(runTraffic({ target: upstream.url, mix: { soap: 1 } as never }), /unknown protocol soap/);
  });
});

describe('parseTrafficArgs', () => {
  test('reads every flag', () => {
    const options = parseTrafficArgs(['--target', 'http://127.0.0.1:9', '--duration-ms', '400', '--rps', '25', '--mix', 'connect=1, rest=2', '--seed', '7']);
    assert.deepEqual(options, { target: 'http://127.0.0.1:9', durationMs: 400, rps: 25, mix: { connect: 1, rest: 2 }, seed: 7 });
  });

  test('refuses a missing target and malformed values', () => {
    assert.throws(() => parseTrafficArgs([]), /--target is required/);
    assert.throws(() => parseTrafficArgs(['--target', 'http://x', '--rps', 'fast']), /--rps: "fast" is not a number/);
    assert.throws(() => parseTrafficArgs(['--target', 'http://x', '--mix', 'rest']), /--mix: "rest" is not protocol=weight/);
  });
});
