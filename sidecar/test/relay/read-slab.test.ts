// Reads into slabs (read-slab.ts) over a real loopback connection: every read
// comes as a Buffer of its own that later reads never write over — what a hop
// keeps of a read (a DATA payload queued for another hop) must stay as it came —
// reads fill a slab in order and move to a new one once too little room is left,
// and the socket still counts what it read (keepalive reads bytesRead) and ends
// as any socket does.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { describe, it } from 'node:test';
import { MIN_READ_ROOM, SLAB_SIZE, slabReads } from '../../src/relay/read-slab.ts';

/** A server that writes `pieces` one at a time, each once the client has read the one before (so each arrives as reads of its own). */
async function serve(pieces: Buffer[]): Promise<{ port: number; close(): void; acks: (n: number) => void }> {
  let ack: (n: number) => void = () => {};
  const server = net.createServer((s) => {
    let next = 0;
    let sent = 0;
    let read = 0;
    const send = (): void => {
      if (next === pieces.length) return void s.end();
      sent += pieces[next]!.length;
      s.write(pieces[next++]!);
    };
    ack = (n) => {
      read += n;
      if (read === sent) send();
    };
    send();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close(), acks: (n) => ack(n) };
}

describe('reads into slabs', () => {
  it('gives each read octets of its own that no later read writes over, and the socket counts and ends as usual', async () => {
    // Pieces from one octet to more than a slab: small reads share a slab, large ones take their own.
    const sizes = [1, 300, 5000, 17_000, 40_000, 9, 70_000, 16_384, 2, 100_000, 313, 289];
    const pieces = sizes.map((n) => randomBytes(n));
    const server = await serve(pieces);
    const kept: { chunk: Buffer; copy: Buffer }[] = [];
    const socket = net.connect({
      host: '127.0.0.1',
      port: server.port,
      onread: slabReads((chunk) => {
        kept.push({ chunk, copy: Buffer.from(chunk) });
        server.acks(chunk.length);
      }),
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('close', () => resolve());
      socket.once('error', reject);
    });
    server.close();

    const total = sizes.reduce((a, b) => a + b, 0);
    // Every read, kept until the end, still holds what it held when it came.
    for (const [i, { chunk, copy }] of kept.entries()) assert.ok(chunk.equals(copy), `read ${i} (${chunk.length} octets) was written over by a later read`);
    assert.ok(Buffer.concat(kept.map((k) => k.chunk)).equals(Buffer.concat(pieces)), 'the reads, in order, are what the server sent');
    assert.equal(socket.bytesRead, total, 'the socket counts what it read');
    // No read is larger than a slab, each had MIN_READ_ROOM at least to fill, and reads share slabs.
    assert.ok(kept.every((k) => k.chunk.length <= SLAB_SIZE));
    const slabs = new Set(kept.map((k) => k.chunk.buffer));
    assert.ok(slabs.size < kept.length, `${kept.length} reads in ${slabs.size} slabs: small reads share one`);
    assert.ok(slabs.size >= Math.ceil(total / SLAB_SIZE), 'more octets than a slab holds take more slabs');
    for (const k of kept) assert.ok(k.chunk.byteOffset + k.chunk.length <= SLAB_SIZE && k.chunk.byteOffset <= SLAB_SIZE - Math.min(MIN_READ_ROOM, k.chunk.length));
  });

  it('gives a read the room left in its slab, in order, and a new slab once less than MIN_READ_ROOM is left', () => {
    const got: Buffer[] = [];
    const reads = slabReads((chunk) => got.push(chunk));
    const buffer = reads.buffer as () => Uint8Array;
    let buf = buffer();
    assert.equal(buf.length, SLAB_SIZE);
    const slab = buf.buffer;
    // Reads of 20 KiB, as the socket would make them: two fit, the third leaves less than MIN_READ_ROOM after it.
    for (let i = 0; i < 3; i++) {
      buf.fill(i + 1, 0, 20 * 1024);
      reads.callback(20 * 1024, buf);
      buf = buffer();
    }
    assert.deepEqual(got.map((c) => c.byteOffset), [0, 20 * 1024, 40 * 1024]);
    assert.ok(got.every((c) => c.buffer === slab), 'the three reads share the first slab');
    assert.notEqual(buf.buffer, slab, 'with 4 KiB left, the next read goes into a new slab');
    assert.equal(buf.length, SLAB_SIZE);
    assert.deepEqual(got.map((c) => [c[0], c.at(-1), c.length]), [[1, 1, 20 * 1024], [2, 2, 20 * 1024], [3, 3, 20 * 1024]]);
  });
});
