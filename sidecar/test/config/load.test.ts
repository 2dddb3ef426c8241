import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig, type Config } from '../../src/config/load.ts';
import { parseDuration } from '../../src/config/parse-value.ts';

function config(argv: string[], env: Record<string, string> = {}): Config {
  const r = loadConfig(argv, env);
  assert.equal(r.kind, 'run');
  return (r as { config: Config }).config;
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const c = config(['--upstream', 'http://127.0.0.1:8080']);
    assert.deepEqual(c.listen, { host: '0.0.0.0', port: 14001 });
    assert.deepEqual(c.admin, { host: '0.0.0.0', port: 14090 });
    assert.equal(c.mode, 'inbound');
    assert.equal(c.drainTimeoutMs, 20_000);
    assert.equal(c.upstream.href, 'http://127.0.0.1:8080');
    assert.ok(Object.isFrozen(c));
  });

  it('keeps its default ports out of the ranges service meshes reserve in the same pod', () => {
    // Istio: https://istio.io/latest/docs/ops/deployment/application-requirements/#ports-used-by-istio
    // Linkerd: https://linkerd.io/2/reference/proxy-configuration/ (4140 outbound … 4191 admin)
    const reserved = [{ mesh: 'Istio', from: 15000, to: 15090 }, { mesh: 'Linkerd', from: 4140, to: 4191 }];
    const c = config(['--upstream', 'http://127.0.0.1:8080']);
    for (const port of [c.listen.port, c.admin.port]) {
      for (const r of reserved) assert.ok(port < r.from || port > r.to, `default port ${port} is in ${r.mesh}'s ${r.from}-${r.to}`);
    }
  });

  it('takes flags over the environment over the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-config-'));
    const file = join(dir, 'rpcscope.yaml');
    writeFileSync(file, 'upstream: http://file:1\nmode: outbound\ndrain-timeout: 3s\nlisten: 127.0.0.1:1\n');
    const c = config(['--config', file, '--listen', '127.0.0.1:2'], { RPCSCOPE_UPSTREAM: 'https://env:443', RPCSCOPE_LISTEN: '127.0.0.1:3' });
    assert.equal(c.listen.port, 2);
    assert.equal(c.upstream.href, 'https://env:443');
    assert.equal(c.upstream.tls, true);
    assert.equal(c.mode, 'outbound');
    assert.equal(c.drainTimeoutMs, 3000);
  });

  it('accepts --flag=value and IPv6 addresses', () => {
    const c = config(['--upstream=http://[::1]:9000', '--listen=[::1]:0']);
    assert.deepEqual(c.listen, { host: '::1', port: 0 });
    assert.equal(c.upstream.host, '::1');
    assert.equal(c.upstream.authority, '[::1]:9000');
  });

  const BAD: [string[], Record<string, string>, RegExp][] = [
    [['--upstream', 'ftp://x:1'], {}, /^--upstream: invalid value "ftp:\/\/x:1": expected http:\/\/host:port/],
    [['--upstream', 'http://x:1/path'], {}, /^--upstream: invalid value/],
    [['--upstream', 'http://x:1', '--listen', '1.2.3.4:70000'], {}, /^--listen: invalid value "1.2.3.4:70000": expected HOST:PORT/],
    [['--upstream', 'http://x:1', '--mode', 'sideways'], {}, /^--mode: invalid value "sideways": expected one of inbound, outbound/],
    [['--upstream', 'http://x:1', '--drain-timeout', '20 seconds'], {}, /^--drain-timeout: invalid value "20 seconds": expected a duration/],
    [['--upstream', 'http://x:1'], { RPCSCOPE_LOG_LEVEL: 'loud' }, /^--log-level: invalid value "loud": expected one of debug, info, warn, error, silent/],
    [['--upstream', 'http://x:1', '--tls-cert', '/nonexistent.pem'], {}, /^--tls-cert: invalid value "\/nonexistent.pem": expected an existing file/],
    [['--upstream', 'http://x:1', '--bogus', '1'], {}, /^unknown flag --bogus/],
    [['--upstream'], {}, /^--upstream: missing value/],
    [[], {}, /^--upstream: missing/],
    [['--upstream', 'http://x:1', '--access-log-sample', '-0.1'], {}, /^--access-log-sample: invalid value "-0.1": expected a number from 0 to 1/],
    [['--upstream', 'http://x:1'], { RPCSCOPE_ACCESS_LOG: '/nonexistent/dir/access.log' }, /^--access-log: invalid value "\/nonexistent\/dir\/access.log": expected off, stdout, stderr or a file path in an existing directory/],
  ];
  for (const [argv, env, message] of BAD) {
    it(`rejects ${JSON.stringify([...argv, ...Object.entries(env).flat()])} naming the setting`, () => {
      assert.throws(() => loadConfig(argv, env), (err: Error) => err.name === 'ConfigError' && message.test(err.message));
    });
  }

  it('takes --max-connections from the flag, RPCSCOPE_MAX_CONNECTIONS or the file, 10000 by default and 0 for no limit', () => {
    assert.equal(config(['--upstream', 'http://x:1']).maxConnections, 10_000);
    assert.equal(config(['--upstream', 'http://x:1', '--max-connections', '2']).maxConnections, 2);
    assert.equal(config(['--upstream', 'http://x:1'], { RPCSCOPE_MAX_CONNECTIONS: '0' }).maxConnections, 0);
    const file = join(mkdtempSync(join(tmpdir(), 'rpcscope-config-')), 'rpcscope.yaml');
    writeFileSync(file, 'upstream: http://x:1\nmax-connections: 500\n');
    assert.equal(config(['--config', file]).maxConnections, 500);
    for (const bad of ['-1', '1.5', 'many', '1000001']) {
      assert.throws(() => loadConfig(['--upstream', 'http://x:1', '--max-connections', bad], {}), (err: Error) => err.name === 'ConfigError' && err.message.startsWith(`--max-connections: invalid value "${bad}": expected a whole number from 0 to 1000000`), bad);
    }
  });

  it('takes the access log and its sample rate, off and every call by default', () => {
    assert.deepEqual([config(['--upstream', 'http://x:1']).accessLog, config(['--upstream', 'http://x:1']).accessLogSample], ['off', 1]);
    const c = config(['--upstream', 'http://x:1', '--access-log', join(tmpdir(), 'access.log'), '--access-log-sample=0.25']);
    assert.deepEqual([c.accessLog, c.accessLogSample], [join(tmpdir(), 'access.log'), 0.25]);
    assert.equal(config(['--upstream', 'http://x:1'], { RPCSCOPE_ACCESS_LOG: 'stdout' }).accessLog, 'stdout');
  });

  it('--check validates like a start and says where each setting came from', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-config-'));
    const file = join(dir, 'rpcscope.yaml');
    writeFileSync(file, 'mode: outbound\n');
    const r = loadConfig(['--check', '--config', file, '--upstream', 'http://x:1'], { RPCSCOPE_BALANCE: 'ewma' });
    assert.equal(r.kind, 'check');
    const from = Object.fromEntries((r as { settings: { flag: string; from: string }[] }).settings.map((s) => [s.flag, s.from]));
    assert.deepEqual([from.upstream, from.balance, from.mode, from.listen, from.routes], ['flag', 'env', 'file', 'default', 'unset']);
    assert.throws(() => loadConfig(['--check', '--upstream', 'http://x:1', '--mode', 'sideways'], {}), /^ConfigError: --mode: invalid value "sideways"/);
  });

  it('--version and --help are actions, not settings', () => {
    assert.deepEqual(loadConfig(['--version'], {}), { kind: 'version' });
    assert.equal(loadConfig(['-h'], {}).kind, 'help');
    assert.equal(loadConfig(['--upstream', 'http://x:1'], { RPCSCOPE_VERSION: '1', RPCSCOPE_CHECK: '1' }).kind, 'run', 'actions are not read from the environment');
    assert.throws(() => loadConfig(['--version=1'], {}), /^ConfigError: unknown flag --version/);
  });

  it('rejects unknown keys in the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-config-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'upstream: http://x:1\nlisten_port: 3\n');
    assert.throws(() => loadConfig(['--config', file], {}), /unknown setting "listen_port"/);
  });

  it('documents every flag with its default and environment variable in --help', () => {
    const r = loadConfig(['--help'], {});
    assert.equal(r.kind, 'help');
    const text = (r as { text: string }).text;
    for (const needle of ['--listen HOSTPORT', '(default 0.0.0.0:14001)', 'RPCSCOPE_UPSTREAM', '--drain-timeout DURATION', '(default 20s)', '--mode inbound|outbound']) {
      assert.ok(text.includes(needle), needle);
    }
  });
});

describe('parseDuration', () => {
  it('reads units and compounds', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('20s'), 20_000);
    assert.equal(parseDuration('1m30s'), 90_000);
    assert.equal(parseDuration('1.5s'), 1500);
    assert.equal(parseDuration('0'), 0);
    assert.equal(parseDuration('20'), undefined);
    assert.equal(parseDuration('s'), undefined);
    assert.equal(parseDuration('5d'), undefined);
  });
});
