// A TCP hop that passes every byte on in random pieces (at most `maxPiece`), one
// write per piece and now and then a turn of the event loop between them, so
// that the reader behind it gets reads that cut frames (and frame headers)
// anywhere. Seeded: a failure names its seed and comes back with it.
import net from 'node:net';

export interface SplittingHop {
  port: number;
  close(): void;
}

export async function startSplittingHop(target: number, opts: { seed: number; host?: string; maxPiece?: number; yieldEvery?: number }): Promise<SplittingHop> {
  const host = opts.host ?? '127.0.0.1';
  const maxPiece = opts.maxPiece ?? 64;
  const yieldEvery = opts.yieldEvery ?? 1;
  let s = opts.seed;
  const rand = (n: number): number => ((s = (s * 1103515245 + 12345) >>> 0) >>> 8) % n;
  const sockets = new Set<net.Socket>();
  const pass = (from: net.Socket, to: net.Socket): void => {
    let queue = Promise.resolve();
    from.on('data', (chunk: Buffer) => {
      queue = queue.then(async () => {
        for (let at = 0; at < chunk.length; ) {
          const n = 1 + rand(Math.min(maxPiece, chunk.length - at));
          if (!to.destroyed) to.write(chunk.subarray(at, at + n));
          at += n;
          if (rand(yieldEvery) === 0) await new Promise((r) => setImmediate(r));
        }
      });
    });
    from.on('end', () => void queue.then(() => to.end()));
    from.on('error', () => to.destroy());
  };
  const server = net.createServer((down) => {
    const up = net.connect(target, host);
    down.setNoDelay(true);
    up.setNoDelay(true);
    sockets.add(down).add(up);
    pass(down, up);
    pass(up, down);
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const k of sockets) k.destroy();
      server.close();
    },
  };
}
