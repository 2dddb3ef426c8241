// Raw TCP clients for hostile-input tests: they write exactly the bytes a test
// gives, keep everything the server sends, and note when the server closed.
import net from 'node:net';
import { readMessages, type H1Message } from './h1-framing.ts';
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

/**
 * The first `n` whole responses the client received (read strictly, h1-framing.ts),
 * as they arrive; rejects if the connection closes before them, or after `timeoutMs`.
 */
export function responses(client: RawClient, n: number, timeoutMs = 5000): Promise<H1Message[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`${n} responses not received within ${timeoutMs} ms: ${JSON.stringify(client.received().toString('latin1'))}`)), timeoutMs);
    const check = (): void => {
      const { messages, error } = readMessages(client.received(), 'response');
      if (messages.length >= n) done(undefined, messages.slice(0, n));
      else if (error) done(new Error(`misframed response: ${error}`));
    };
    const closed = (): void => {
      check();
      done(new Error(`the connection closed after ${readMessages(client.received(), 'response').messages.length} of ${n} responses: ${JSON.stringify(client.received().toString('latin1'))}`));
    };
    let settled = false;
    function done(err: Error | undefined, got?: H1Message[]): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.socket.off('data', check);
      if (err) reject(err);
      else resolve(got!);
    }
    client.socket.on('data', check);
    void client.closed.then(closed);
    check();
  });
}
