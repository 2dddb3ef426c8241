// System calls per call of rpcscope's relays alone, the short form of the
// strace rows of relay.ts: a fixed number of calls through the HTTP/2 relay
// (h2c and TLS from the client, h2c to nghttpd) and the HTTP/1.1 relay
// (--http1-data-plane relay, to a static nginx); strace -c -f on every thread
// of the sidecar. The count does not depend on the machine's load, so a busy
// machine still reads it right.
//
//   node --import tsx test/bench/relay-syscalls.ts [--calls 5000] [--only grpc-256,grpc-256-tls,rest-order-h1]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeSelfSignedCert } from '../../sidecar/test/support/certs.ts';
import { startSidecarProcess } from '../support/sidecar-process.ts';
import { h2load } from './h2load.ts';
import { countSyscalls, straceInstalled } from './syscalls.ts';
import { startNghttpd, startStaticNginx, type Upstream } from './upstreams.ts';
import { workloads, writeFiles } from './workloads.ts';

const args = process.argv.slice(2);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const CALLS = Number(value('--calls') ?? 5000);
const ONLY = (value('--only') ?? 'grpc-256,grpc-256-tls,rest-order-h1').split(',').filter(Boolean);
/** A pod's everyday shape: 8 connections, one call at a time on each. */
const SHAPE = ['-c', '8', '-m', '1'];

if (!Number.isInteger(CALLS) || CALLS < 8) throw new Error(`--calls must be an integer of 8 or more, got ${value('--calls')}`);
if (!straceInstalled()) throw new Error('strace is not installed (apt-get install strace)');

const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-syscalls-'));
const cert = makeSelfSignedCert();
const files = writeFiles(work);
const upstreams = new Map<'h2' | 'h1', Upstream>();
const upstream = async (proto: 'h2' | 'h1'): Promise<Upstream> => {
  let u = upstreams.get(proto);
  if (!u) upstreams.set(proto, (u = proto === 'h2' ? await startNghttpd(files.docroot) : await startStaticNginx(work, files.docroot)));
  return u;
};

const rows: string[] = [];
try {
  for (const w of workloads(work, files, CALLS, 1000).filter((w) => ONLY.includes(w.id))) {
    const up = await upstream(w.upstreamProto);
    const sidecarArgs = ['--upstream', up.url, '--data-plane', 'relay', '--http1-data-plane', 'relay', '--upstream-protocol', w.upstreamProto === 'h2' ? 'http2' : 'http1', '--log-level', 'info'];
    if (w.frontend === 'tls') sidecarArgs.push('--tls-cert', cert.certFile, '--tls-key', cert.keyFile);
    const sc = await startSidecarProcess(sidecarArgs);
    try {
      const url = `${w.frontend === 'tls' ? 'https' : 'http'}://127.0.0.1:${sc.port}${w.path}`;
      // A first run opens the upstream connections and warms the JIT; the counted run follows.
      h2load(url, SHAPE, w.request, 200, undefined);
      const { result, count } = await countSyscalls(sc.proc.pid!, () => h2load(url, SHAPE, w.request, CALLS, undefined));
      const top = count.top.map(([name, n]) => `${name} ${(n / result.ok).toFixed(2)}`).join(', ');
      rows.push(`| ${w.id} | ${result.ok} | ${result.failed} | ${(count.total / result.ok).toFixed(2)} | ${top} |`);
    } finally {
      await sc.stop();
    }
  }
} finally {
  for (const u of upstreams.values()) u.stop();
}
console.log(`h2load -n ${CALLS} ${SHAPE.join(' ')}, strace -c -f on the sidecar (${process.version})\n`);
console.log('| workload | calls ok | failed | system calls per call | most frequent, per call |\n|---|---:|---:|---:|---|');
for (const r of rows) console.log(r);
