// The floor of any relay written on Node's sockets: each client connection
// paired 1:1 with one upstream connection, as rpcscope's relays pair them, and
// the bytes copied both ways as they are read, with nothing parsed, observed or
// rewritten. No proxy on Node can do less per call than this; rpcscope's relay
// rows are set against it to tell what is ours from what is Node's (net.Socket,
// libuv, one read and one write per direction per call). TLS frontends end TLS
// here and copy the plaintext on. Prints its URL on stdout.
//   node --import tsx test/bench/node-pipe.ts h2c|tls|h1 UPSTREAM_URL [CERT KEY]
import net from 'node:net';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';

const [mode, upstream, certFile, keyFile] = process.argv.slice(2);
if (!upstream || !['h2c', 'tls', 'h1'].includes(mode ?? '')) {
  process.stderr.write('usage: node-pipe.ts h2c|tls|h1 UPSTREAM_URL [CERT KEY]\n');
  process.exit(2);
}
const target = new URL(upstream);

/** Copies `from` into `to` as it is read, pausing `from` while `to` holds more than its high-water mark. */
function copy(from: net.Socket, to: net.Socket): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk)) from.pause();
  });
  to.on('drain', () => from.resume());
  from.on('end', () => to.end());
}

function pair(client: net.Socket): void {
  client.setNoDelay(true);
  const app = net.connect({ host: target.hostname, port: Number(target.port), noDelay: true });
  copy(client, app);
  copy(app, client);
  const end = (): void => {
    client.destroy();
    app.destroy();
  };
  client.on('error', end).on('close', end);
  app.on('error', end).on('close', end);
}

const server =
  mode === 'tls'
    ? tls.createServer({ cert: readFileSync(certFile!), key: readFileSync(keyFile!), ALPNProtocols: ['h2'] }, pair)
    : net.createServer(pair);
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${mode === 'tls' ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
