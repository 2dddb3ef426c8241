// Raw TCP clients for hostile-input tests: they write exactly the bytes a test
// gives, keep everything the server sends, and note when the server closed.
import net from 'node:net';
import { parseExposition, sum, type Matchers } from './metrics-text.ts';

export interface RawClient {
  socket: net.Socket;
  openedAt: number;
  /** When the connection closed; undefined while it is open. */
  closedAt: number | undefined;
  received(): Buffer;
  closed: Promise<void>;
}

export function rawConnect(port: number): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    // Before connecting: the sidecar's clock for this connection starts after ours,
    // so a held time measured from here is never shorter than the sidecar's.
    const startedAt = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const client: RawClient = {
      socket,
      openedAt: startedAt,
      closedAt: undefined,
      received: () => Buffer.concat(chunks),
      closed: new Promise((done) => socket.once('close', () => ((client.closedAt = Date.now()), done()))),
    };
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => {});
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(client);
    });
    socket.once('error', reject);
  });
}

/** `sum(name{where})` from the sidecar's /metrics. */
export async function scrape(adminUrl: string, name: string, where: Matchers = {}): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  return sum(parseExposition(text), name, where);
}

export function terminated(adminUrl: string, reason: string): Promise<number> {
  return scrape(adminUrl, 'rpcscope_connections_terminated_total', { reason });
}
