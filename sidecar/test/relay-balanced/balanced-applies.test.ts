// Which settings send outbound HTTP/2 to the balanced relay, and which keep the
// terminating path, read from the command line as a user gives it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, type Config } from '../../src/config/load.ts';
import { balancedRelayApplies } from '../../src/relay-balanced/balanced-applies.ts';
import { relayApplies } from '../../src/relay/relay-applies.ts';

function config(...args: string[]): Config {
  const r = loadConfig(['--upstream', 'http://orders.test:8080', '--mode', 'outbound', ...args], {});
  assert.equal(r.kind, 'run');
  return (r as { config: Config }).config;
}

describe('balancedRelayApplies', () => {
  it('relays outbound calls by default, and terminates them with --outbound-data-plane terminate', () => {
    assert.equal(config().outboundDataPlane, 'relay');
    assert.equal(balancedRelayApplies(config()), true);
    assert.equal(balancedRelayApplies(config('--outbound-data-plane', 'terminate')), false);
    assert.equal(balancedRelayApplies(config('--outbound-data-plane', 'relay')), true);
    assert.equal(balancedRelayApplies(config('--outbound-data-plane', 'relay', '--upstream-protocol', 'http2', '--enforce-deadlines')), true);
    // The inbound relay, 1:1, never takes an outbound connection.
    assert.equal(relayApplies(config('--outbound-data-plane', 'relay')), false);
  });

  it('applies in outbound mode only, and not where a call needs one of its own', () => {
    const r = loadConfig(['--upstream', 'http://127.0.0.1:8080', '--outbound-data-plane', 'relay'], {});
    assert.equal(balancedRelayApplies((r as { config: Config }).config), false, 'inbound mode');
    assert.equal(balancedRelayApplies(config('--outbound-data-plane', 'relay', '--upstream-protocol', 'http1')), false, 'an HTTP/1.1 service');
    assert.equal(balancedRelayApplies(config('--outbound-data-plane', 'relay', '--shadow', 'http://127.0.0.1:9091')), false, 'mirrored calls');
    assert.equal(balancedRelayApplies(config('--outbound-data-plane', 'relay', '--grpc-web-bridge')), false, 'translated calls');
  });

  it('refuses a data plane it does not know, naming the flag', () => {
    assert.throws(() => config('--outbound-data-plane', 'splice'), /--outbound-data-plane/);
  });
});
