// `npm run demo`: the order service (gRPC, Connect, gRPC-Web and REST on one
// port) with the real rpcscope sidecar in front of it, a burst of traffic in every
// protocol through the sidecar, and what rpcscope saw, read back from /metrics.
// It then keeps a light traffic going until Ctrl-C, so /metrics can be scraped.
// `--once` stops after the first burst (the tests run it that way).
import { PROTO_DIR, startOrderService } from './index.ts';
import { startSidecarProcess } from './sidecar-process.ts';
import { runTraffic, TRAFFIC_PROTOCOLS } from './traffic.ts';

const args = process.argv.slice(2);
const once = args.includes('--once');
const flag = (name: string, dflt: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : dflt;
};
const listen = flag('--listen', '127.0.0.1:15001');
const admin = flag('--admin', '127.0.0.1:15090');

/** `rpcscope_calls_total` summed by protocol and code, from the exposition text. */
function callsByProtocol(exposition: string): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const line of exposition.split('\n')) {
    if (!line.startsWith('rpcscope_calls_total{')) continue;
    const protocol = /protocol="([^"]*)"/.exec(line)?.[1] ?? '';
    const code = /code="([^"]*)"/.exec(line)?.[1] ?? '';
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    const byCode = out.get(protocol) ?? new Map<string, number>();
    byCode.set(code, (byCode.get(code) ?? 0) + value);
    out.set(protocol, byCode);
  }
  return out;
}

const orders = await startOrderService({ podName: 'orders-0' });
const sidecar = await startSidecarProcess(['--listen', listen, '--admin', admin, '--upstream', orders.url, '--proto', PROTO_DIR]);
const stop = async (): Promise<void> => {
  await sidecar.stop();
  await orders.close();
};
process.stdout.write(`order service   ${orders.url}  (gRPC, Connect, gRPC-Web, REST)\n`);
process.stdout.write(`rpcscope proxy  ${sidecar.url}  -> ${orders.url}\n`);
process.stdout.write(`rpcscope admin  ${sidecar.adminUrl}/metrics  /healthz  /readyz\n\n`);

try {
  process.stdout.write('sending 5 s of traffic through the sidecar in every protocol...\n');
  const result = await runTraffic({ target: sidecar.url, durationMs: 5000, rps: 40, seed: 1 });
  process.stdout.write('\nwhat the clients saw\n');
  for (const p of TRAFFIC_PROTOCOLS) {
    const c = result.byProtocol[p];
    process.stdout.write(`  ${p.padEnd(9)} ${String(c.calls).padStart(4)} calls  ${String(c.ok).padStart(4)} ok  ${String(c.failed).padStart(3)} failed  ${JSON.stringify(c.codes)}\n`);
  }
  const metrics = await (await fetch(`${sidecar.adminUrl}/metrics`)).text();
  process.stdout.write('\nwhat rpcscope counted (rpcscope_calls_total by protocol and code)\n');
  for (const [protocol, byCode] of callsByProtocol(metrics)) {
    process.stdout.write(`  ${protocol.padEnd(9)} ${[...byCode].map(([code, n]) => `${code}=${n}`).join('  ')}\n`);
  }
  process.stdout.write(`\n${metrics.split('\n').filter((l) => l.startsWith('rpcscope_')).length} rpcscope series on ${sidecar.adminUrl}/metrics\n`);
} catch (err) {
  await stop();
  throw err;
}

if (once) {
  await stop();
} else {
  process.stdout.write('\nkeeping light traffic going; Ctrl-C to stop\n');
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  while (!abort.signal.aborted) await runTraffic({ target: sidecar.url, durationMs: 60_000, rps: 5, signal: abort.signal });
  await stop();
}
