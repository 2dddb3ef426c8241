// What an idle client connection costs the sidecar: N HTTP/2 connections set up
// (preface, SETTINGS, ACK) and left open, on each data plane, then the resident
// memory added, in all and per connection. The figure behind --max-connections'
// default: a relayed connection also holds its own upstream connection.
//
//   node --import tsx test/bench/idle-connections.ts [connections]
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { FLAG, PREFACE, settings } from '../support/h2-frames.ts';
import { MB, rssBytes } from '../support/process-stats.ts';
import { startSidecarProcess } from '../support/sidecar-process.ts';

const N = Number(process.argv[2] ?? 2000);
/** How long the connections sit before the RSS is read: set-up garbage collected. */
const SETTLE_MS = 3000;

const app = http2.createServer();
app.on('stream', (s) => {
  s.respond({ ':status': 200 });
  s.end('ok');
});
await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
const upstream = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;

process.stdout.write(`| data plane | idle HTTP/2 connections | RSS added | per connection |\n|---|---|---|---|\n`);
for (const plane of ['relay', 'terminate']) {
  const sc = await startSidecarProcess(['--upstream', upstream, '--data-plane', plane]);
  const pid = sc.proc.pid!;
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const base = rssBytes(pid);
  const sockets: net.Socket[] = [];
  for (let i = 0; i < N; i++) {
    const c = net.connect(sc.port, '127.0.0.1');
    c.on('error', () => {});
    await new Promise((r) => c.once('connect', r));
    c.write(Buffer.concat([PREFACE, settings()]));
    c.once('data', () => c.write(settings([], FLAG.ACK)));
    sockets.push(c);
  }
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const grown = rssBytes(pid) - base;
  process.stdout.write(`| ${plane} | ${N} | ${(grown / MB).toFixed(1)} MiB | ${(grown / N / 1024).toFixed(1)} KiB |\n`);
  for (const s of sockets) s.destroy();
  await sc.stop();
}
app.close();
