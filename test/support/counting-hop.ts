// A TCP hop that passes every byte on unchanged, with backpressure, and counts
// the bytes each way: put in front of an app, it tells how much a proxy sent
// the app and how much the app got to send back.
import net, { type AddressInfo } from 'node:net';

export interface CountingHop {
  port: number;
  url: string;
  /** Bytes passed toward the target so far. */
  toTarget(): number;
  /** Bytes passed back from the target so far. */
  fromTarget(): number;
  close(): void;
}

export async function startCountingHop(targetPort: number): Promise<CountingHop> {
  let to = 0;
  let from = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const target = net.connect(targetPort, '127.0.0.1');
    for (const s of [client, target]) {
      sockets.add(s);
      s.on('error', () => {
        client.destroy();
        target.destroy();
      });
      s.on('close', () => sockets.delete(s));
    }
    client.on('data', (d: Buffer) => (to += d.length));
    target.on('data', (d: Buffer) => (from += d.length));
    client.pipe(target);
    target.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    toTarget: () => to,
    fromTarget: () => from,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
