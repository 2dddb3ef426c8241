// The balancer learns that a call ended from its pick (onCallEnded), not as an
// observer: calls in flight per endpoint go up with each pick and down with
// each end, which least_request balances on; an endpoint gone from discovery is
// retired once its last call ends.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { UpstreamUrl } from '../../../src/config/parse-value.ts';
import { createLogger } from '../../../src/log.ts';
import { newCallRecord, type CallRecord } from '../../../src/call/call-record.ts';
import { LeastRequestPicker } from '../../../src/upstream/balancer/picker-least-request.ts';
import type { EndpointAddress } from '../../../src/upstream/balancer/resolver.ts';
import { BalancedUpstreams, fixedUpstreams } from '../../../src/upstream/balancer/upstreams.ts';

const BASE: UpstreamUrl = { tls: false, host: 'orders', port: 8080, authority: 'orders:8080', href: 'http://orders:8080' };

function ended(): CallRecord {
  const r = newCallRecord(1, { direction: 'outbound', protocol: 'grpc', encoding: 'proto', framed: true, httpVersion: '2', httpMethod: 'POST', path: '/a.B/C', connectionId: 1, startTime: 0 });
  r.upstreamStartTime = 1;
  r.upstreamEndTime = 2;
  r.endTime = 3;
  return r;
}

describe('balancer: the pick carries the call end', () => {
  it('least_request sees the calls that ended through onCallEnded', async () => {
    const upstreams = new BalancedUpstreams({
      upstream: BASE,
      resolver: { resolve: async () => [{ host: '10.0.0.1', port: 80 }, { host: '10.0.0.2', port: 80 }] },
      picker: new LeastRequestPicker(),
      resolveIntervalMs: 60_000,
      log: createLogger('silent'),
      retire: () => {},
    });
    await upstreams.start();
    try {
      const a = upstreams.pick(1)!;
      const b = upstreams.pick(1)!;
      assert.notEqual(a.target.authority, b.target.authority, 'one call in flight on each');
      assert.equal(typeof a.onCallEnded, 'function');
      a.onCallEnded!(ended());
      // a's endpoint is idle again and b's is busy: every next pick goes to a's until it is as busy.
      assert.equal(upstreams.pick(1)!.target.authority, a.target.authority);
    } finally {
      upstreams.stop();
    }
  });

  it('retires an endpoint gone from discovery when its last call ends', async () => {
    let addrs: EndpointAddress[] = [{ host: '10.0.0.1', port: 80 }];
    const retired: string[] = [];
    const upstreams = new BalancedUpstreams({
      upstream: BASE,
      resolver: { resolve: async () => addrs },
      picker: new LeastRequestPicker(),
      resolveIntervalMs: 10,
      log: createLogger('silent'),
      retire: (t) => retired.push(t.authority),
    });
    await upstreams.start();
    try {
      const pick = upstreams.pick(1)!;
      addrs = [{ host: '10.0.0.2', port: 80 }];
      while (upstreams.known()[0] !== '10.0.0.2:80') await new Promise((r) => setTimeout(r, 10));
      assert.deepEqual(retired, [], 'a call is still in flight there');
      pick.onCallEnded!(ended());
      assert.deepEqual(retired, ['10.0.0.1:80']);
    } finally {
      upstreams.stop();
    }
  });

  it('inbound: the app, or --grpc-upstream for the gRPC family, with nothing to learn', () => {
    const grpc: UpstreamUrl = { ...BASE, host: 'grpc', authority: 'grpc:9090', port: 9090, href: 'http://grpc:9090' };
    const fixed = fixedUpstreams(BASE, grpc);
    assert.equal(fixed.pick(1, false)!.target, BASE);
    assert.equal(fixed.pick(1, true)!.target, grpc);
    assert.equal(fixed.pick(1, true)!.onCallEnded, undefined);
  });
});
