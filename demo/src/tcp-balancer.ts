// A connection-level TCP balancer, as kube-proxy is for a ClusterIP Service:
// it picks a backend once per incoming connection and then only copies bytes
// both ways. It never sees an HTTP/2 frame, so every call a client multiplexes
// over one connection lands on the backend that connection was given, which is
// the stickiness the fleet tests reproduce.
import { createConnection, createServer, type Socket } from 'node:net';

export interface Backend {
  host: string;
  port: number;
}

/** `random` is kube-proxy's iptables mode (a random rule per connection); `round_robin` its IPVS default. */
export type BalancerPick = 'random' | 'round_robin';

export interface TcpBalancerOptions {
  backends: readonly Backend[];
  pick?: BalancerPick;
  /** Seeds `random`, so that a run repeats; default 1. */
  seed?: number;
  host?: string;
  port?: number;
}

export interface TcpBalancer {
  host: string;
  port: number;
  /** `http://host:port`, for a client that speaks h2c to the backends. */
  url: string;
  /** Connections accepted so far per backend, keyed `host:port`, every backend present. */
  connectionsPerBackend(): Record<string, number>;
  /** Connections open now (client side). */
  openConnections(): number;
  /**
   * Takes a backend out of the pick (false) or puts it back (true), as the
   * endpoints of a Service drop a terminating pod until it is ready again.
   * Connections already open stay where they are.
   */
  setReady(backend: Backend, ready: boolean): void;
  close(): Promise<void>;
}

export const backendKey = (b: Backend): string => `${b.host}:${b.port}`;

/** mulberry32: a small deterministic generator, enough to spread connections. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function startTcpBalancer(opts: TcpBalancerOptions): Promise<TcpBalancer> {
  if (opts.backends.length === 0) throw new Error('startTcpBalancer: no backends');
  const backends = [...opts.backends];
  const random = seededRandom(opts.seed ?? 1);
  const notReady = new Set<string>();
  let next = 0;
  const pick = (): Backend => {
    const ready = notReady.size === 0 ? backends : backends.filter((b) => !notReady.has(backendKey(b)));
    // With every backend out, connections still go somewhere and fail there, as they would in a cluster.
    const from = ready.length === 0 ? backends : ready;
    const i = opts.pick === 'round_robin' ? next++ % from.length : Math.floor(random() * from.length);
    return from[i]!;
  };
  const accepted: Record<string, number> = Object.fromEntries(backends.map((b) => [backendKey(b), 0]));
  const open = new Set<Socket>();
  let clientsOpen = 0;

  // allowHalfOpen on both sides: a FIN from one peer is passed on as a FIN, as
  // a kernel-level proxy would, rather than closing the whole connection.
  const server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    const backend = pick();
    const key = backendKey(backend);
    accepted[key] = (accepted[key] ?? 0) + 1;
    const upstream = createConnection({ host: backend.host, port: backend.port, allowHalfOpen: true, noDelay: true });
    open.add(client);
    open.add(upstream);
    clientsOpen++;
    // An error on either side tears down both, as a reset would.
    const teardown = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', teardown);
    upstream.on('error', teardown);
    client.on('close', () => {
      open.delete(client);
      clientsOpen--;
      upstream.destroy();
    });
    upstream.on('close', () => {
      open.delete(upstream);
      client.destroy();
    });
    client.pipe(upstream);
    upstream.pipe(client);
  });

  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('tcp balancer: no address');

  return {
    host,
    port: addr.port,
    url: `http://${host}:${addr.port}`,
    connectionsPerBackend: () => ({ ...accepted }),
    openConnections: () => clientsOpen,
    setReady(backend, ready) {
      if (ready) notReady.delete(backendKey(backend));
      else notReady.add(backendKey(backend));
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of open) s.destroy();
      await closed;
    },
  };
}
