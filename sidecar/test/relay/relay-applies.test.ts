// Which settings send inbound HTTP/2 to the relay, and which keep the
// terminating path, read from the command line as a user gives it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROTO_DIR } from '@rpcscope/demo';
import { loadConfig, type Config } from '../../src/config/load.ts';
import { relayApplies } from '../../src/relay/relay-applies.ts';

function config(...args: string[]): Config {
  const r = loadConfig(['--upstream', 'http://127.0.0.1:8080', ...args], {});
  assert.equal(r.kind, 'run');
  return (r as { config: Config }).config;
}

describe('relayApplies', () => {
  it('relays by default, and keeps the terminating path when asked', () => {
    assert.equal(config().dataPlane, 'relay');
    assert.equal(relayApplies(config()), true);
    assert.equal(relayApplies(config('--data-plane', 'terminate')), false);
  });

  it('relays with --data-plane relay, also with deadlines enforced and a connection age', () => {
    assert.equal(relayApplies(config('--data-plane', 'relay')), true);
    assert.equal(relayApplies(config('--data-plane', 'relay', '--enforce-deadlines', '--max-connection-age', '5m')), true);
  });

  it('keeps the terminating path where a call needs an upstream of its own', () => {
    assert.equal(relayApplies(config('--data-plane', 'relay', '--mode', 'outbound')), false);
    assert.equal(relayApplies(config('--data-plane', 'relay', '--grpc-upstream', 'http://127.0.0.1:9090')), false);
    assert.equal(relayApplies(config('--data-plane', 'relay', '--upstream-protocol', 'http1')), false, 'an HTTP/1.1 upstream gets each call translated');
    assert.equal(relayApplies(config('--data-plane', 'relay', '--upstream-protocol', 'http2')), true);
    assert.equal(relayApplies(config('--data-plane', 'relay', '--grpc-web-bridge')), false, 'gRPC-Web calls translated to gRPC');
    assert.equal(relayApplies(config('--data-plane', 'relay', '--shadow', 'http://127.0.0.1:9091')), false, 'calls mirrored to a second upstream');
    assert.equal(relayApplies(config('--data-plane', 'relay', '--transcode', '--proto', PROTO_DIR)), false, 'REST calls transcoded to gRPC');
  });

  it('refuses a data plane it does not know, naming the flag', () => {
    assert.throws(() => config('--data-plane', 'splice'), /--data-plane/);
  });
});
