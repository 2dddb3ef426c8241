// Which settings send inbound HTTP/1.1 to the HTTP/1.1 relay, and which keep the
// terminating path, read from the command line as a user gives it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, type Config } from '../../src/config/load.ts';
import { h1RelayApplies } from '../../src/relay-h1/h1-relay-applies.ts';

function config(...args: string[]): Config {
  const r = loadConfig(['--upstream', 'http://127.0.0.1:8080', ...args], {});
  assert.equal(r.kind, 'run');
  return (r as { config: Config }).config;
}

const RELAY = ['--http1-data-plane', 'relay', '--upstream-protocol', 'http1'];

function loadRelay(env: NodeJS.ProcessEnv): Config {
  const r = loadConfig(['--upstream', 'http://127.0.0.1:8080'], env);
  assert.equal(r.kind, 'run');
  return (r as { config: Config }).config;
}

describe('h1RelayApplies', () => {
  it('relays by default, and terminates with --http1-data-plane terminate', () => {
    assert.equal(config().http1DataPlane, 'relay');
    assert.equal(h1RelayApplies(config()), true);
    assert.equal(h1RelayApplies(config('--upstream-protocol', 'http1')), true);
    assert.equal(h1RelayApplies(config('--http1-data-plane', 'terminate')), false);
    assert.equal(h1RelayApplies(loadRelay({ RPCSCOPE_HTTP1_DATA_PLANE: 'terminate' })), false, 'from the environment, as a pod spec sets it');
  });

  it('relays with --http1-data-plane relay toward a plain HTTP/1.1 upstream', () => {
    assert.equal(h1RelayApplies(config(...RELAY)), true);
    assert.equal(h1RelayApplies(config('--http1-data-plane', 'relay')), true, 'auto: decided per connection by what the app speaks');
    assert.equal(h1RelayApplies(config(...RELAY, '--data-plane', 'terminate')), true, 'the HTTP/2 plane is chosen apart');
  });

  it('keeps the terminating path where the upstream is spoken to over HTTP/2', () => {
    assert.equal(h1RelayApplies(config('--http1-data-plane', 'relay', '--upstream-protocol', 'http2')), false);
  });

  it('relays toward an https:// upstream', () => {
    const tls = loadConfig(['--upstream', 'https://127.0.0.1:8443', ...RELAY], {});
    assert.equal(tls.kind, 'run');
    assert.equal(h1RelayApplies((tls as { config: Config }).config), true);
  });

  it('keeps the terminating path where every call needs one of its own upstream (outbound, the mirror)', () => {
    assert.equal(h1RelayApplies(config(...RELAY, '--mode', 'outbound')), false);
    assert.equal(h1RelayApplies(config(...RELAY, '--shadow', 'http://127.0.0.1:9091')), false);
  });

  it('relays beside a translating path, which takes its calls per request (h1-relay-hand-over.test.ts)', () => {
    assert.equal(h1RelayApplies(config(...RELAY, '--grpc-upstream', 'http://127.0.0.1:9090')), true);
    assert.equal(h1RelayApplies(config(...RELAY, '--grpc-web-bridge')), true);
  });
});
