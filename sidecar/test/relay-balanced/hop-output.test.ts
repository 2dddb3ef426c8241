// A hop's output (hop-output.ts) over a real loopback socket: whatever mix of
// frame headers, small payloads copied into the stage and large ones passed by
// reference is queued, the peer reads exactly those octets in that order, and a
// staging buffer handed back is reused without touching what was written, whether
// the socket took the write at once or still holds it queued. And
// when what is queued is written: after the poll phase, or at once for the first
// read of a quiet loop.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { FRAME_HEADER_LENGTH } from '../../src/h2/frame-types.ts';
import { writeFrameHeader } from '../../src/h2/frames.ts';
import { afterRead, beforeRead, HopOutput, streamEnded, whenWritten, writeSoon, type Writer } from '../../src/relay-balanced/hop-output.ts';

/**
 * A socket pair on loopback: what the writer sends, `received` resolves with once
 * it ends. The writer is still connecting when returned, so what is written waits
 * in it, by reference, as an endpoint's first frames do (a stage reused too early shows).
 */
async function pair(): Promise<{ writer: net.Socket; received: Promise<Buffer>; close(): void }> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const received = new Promise<Buffer>((resolve) => {
    server.once('connection', (reader) => {
      const parts: Buffer[] = [];
      reader.on('data', (d: Buffer) => parts.push(d));
      reader.on('end', () => resolve(Buffer.concat(parts)));
    });
  });
  const writer = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  return { writer, received, close: () => server.close() };
}

/** One thing queued: a frame header, or octets (a fill byte and a length). */
type Item = { kind: 'header'; length: number; type: number; flags: number; id: number } | { kind: 'octets'; fill: number; length: number };

const item: fc.Arbitrary<Item> = fc.oneof(
  fc.record({ kind: fc.constant('header' as const), length: fc.integer({ min: 0, max: 0xffffff }), type: fc.integer({ min: 0, max: 9 }), flags: fc.integer({ min: 0, max: 255 }), id: fc.integer({ min: 0, max: 0x7fffffff }) }),
  // From nothing, past the size copied (4 KiB), to more than a stage holds (16 KiB).
  fc.record({ kind: fc.constant('octets' as const), fill: fc.integer({ min: 0, max: 255 }), length: fc.oneof(fc.integer({ min: 0, max: 600 }), fc.integer({ min: 3000, max: 40_000 })) }),
);

function expected(items: Item[]): Buffer {
  return Buffer.concat(
    items.map((i) => {
      if (i.kind === 'octets') return Buffer.alloc(i.length, i.fill);
      const h = Buffer.alloc(FRAME_HEADER_LENGTH);
      writeFrameHeader(h, 0, i.length, i.type, i.flags, i.id);
      return h;
    }),
  );
}

describe('hop output', () => {
  it('writes a frame header as RFC 9113 §4.1 lays it out', () => {
    const h = Buffer.alloc(FRAME_HEADER_LENGTH);
    writeFrameHeader(h, 0, 0x012345, 0x1, 0x25, 0x80000003);
    // 24-bit length, type, flags, the reserved bit cleared and a 31-bit stream id.
    assert.deepEqual([...h], [0x01, 0x23, 0x45, 0x01, 0x25, 0x00, 0x00, 0x00, 0x03]);
  });

  it('delivers every queued octet in order, in writes of several flushes, with stages reused between them', async () => {
    await fc.assert(
      // Connected first or not: a stage written whole at once is taken back, one still queued is not.
      fc.asyncProperty(fc.array(fc.array(item, { maxLength: 12 }), { minLength: 1, maxLength: 5 }), fc.boolean(), async (flushes, connected) => {
        const { writer, received, close } = await pair();
        if (connected) await new Promise((r) => writer.once('connect', r));
        const out = new HopOutput();
        // A second output drawing on the same spare stages between the first's flushes: what one wrote must not change.
        const other = new HopOutput();
        for (const items of flushes) {
          for (const i of items) {
            if (i.kind === 'header') out.frameHeader(i.length, i.type, i.flags, i.id);
            else out.put(Buffer.alloc(i.length, i.fill));
          }
          assert.equal(out.bytes, expected(items).length);
          out.writeTo(writer);
          assert.equal(out.bytes, 0);
          other.put(Buffer.alloc(100, 0xee));
          other.clear();
        }
        writer.end();
        const got = await received;
        close();
        assert.ok(got.equals(expected(flushes.flat())), `${got.length} octets read, ${expected(flushes.flat()).length} queued`);
      }),
      { numRuns: 60 },
    );
  });

  it('writes a copy of a large piece that has to wait behind octets still queued: the socket keeps no piece of a read slab', async () => {
    const { writer, received, close } = await pair();
    const out = new HopOutput();
    // Still connecting: the first write waits in the socket, and the piece after it waits behind it.
    out.put(Buffer.alloc(10, 0x11));
    out.writeTo(writer);
    assert.ok(writer.writableLength > 0);
    const piece = Buffer.alloc(8 * 1024, 0x22);
    out.put(piece);
    out.writeTo(writer);
    // As a read slab's piece would be, were its octets written over before the socket sent them.
    piece.fill(0x33);
    writer.end();
    const got = await received;
    close();
    assert.ok(got.equals(Buffer.concat([Buffer.alloc(10, 0x11), Buffer.alloc(8 * 1024, 0x22)])), 'the peer reads the piece as it was when written');
  });
});

describe('write schedule', () => {
  /** A hop as the schedule sees it, counting its flushes. */
  const hop = (): Writer & { flushes: number } => {
    const w = {
      listed: false,
      flushes: 0,
      flush(): void {
        w.listed = false;
        w.flushes++;
      },
    };
    return w;
  };
  /** Lets the event loop reach its check phase, where what is queued is written, and go on into its next iteration. */
  const nextIteration = (): Promise<void> => new Promise((r) => setImmediate(() => setImmediate(r)));
  /** An iteration that read `n` sockets, queuing nothing: the loop is quiet after one, busy after several. */
  const iterationOf = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      beforeRead();
      afterRead();
    }
    await nextIteration();
  };
  /** A read that queued frames on `h`, as H2Hop's does. */
  const read = (h: Writer): void => {
    beforeRead();
    if (!h.listed) writeSoon(h);
    afterRead();
  };

  it('writes the first read of an iteration at once when the last iteration read one socket at most, and later reads after the poll phase', async () => {
    await iterationOf(1);
    const first = hop();
    read(first);
    assert.equal(first.flushes, 1, 'a quiet loop writes the first read as soon as it is parsed');
    const second = hop();
    read(second);
    read(first);
    assert.equal(second.flushes, 0, 'a second read in the iteration waits for the check phase');
    assert.equal(first.flushes, 1);
    await nextIteration();
    assert.equal(second.flushes, 1);
    assert.equal(first.flushes, 2);
  });

  it('after an iteration of several reads, writes each hop once after the poll phase, whatever the reads queued on it', async () => {
    await iterationOf(2);
    const shared = hop();
    const other = hop();
    read(shared);
    read(other);
    read(shared);
    assert.equal(shared.flushes + other.flushes, 0, 'a busy loop writes nothing before the check phase');
    await nextIteration();
    assert.equal(shared.flushes, 1);
    assert.equal(other.flushes, 1);
  });

  it('settles what a read ended once that read is written in a quiet loop, and at once outside a read', async () => {
    await iterationOf(1);
    const h = hop();
    const order: string[] = [];
    beforeRead();
    writeSoon(h);
    whenWritten({ written: () => void order.push(`a call's end, after ${h.flushes} write`) });
    assert.equal(order.length, 0, 'nothing is settled while the read is parsed');
    afterRead();
    assert.deepEqual(order, ["a call's end, after 1 write"]);
    whenWritten({ written: () => void order.push('an end outside a read') });
    assert.deepEqual(order, ["a call's end, after 1 write", 'an end outside a read']);
    await nextIteration();
  });

  it("writes an answer's end at once in a quiet loop's first read, ahead of the read's end, once a read", async () => {
    await iterationOf(1);
    const client = hop();
    const other = hop();
    beforeRead();
    writeSoon(client);
    streamEnded(client);
    assert.equal(client.flushes, 1, "the answer's last frame goes before the rest of the read is parsed");
    writeSoon(other);
    streamEnded(other);
    assert.equal(other.flushes, 0, 'a second end in the same read waits, to be written with the read');
    afterRead();
    assert.equal(other.flushes, 1);
    // The second read of the iteration writes after the poll phase, its ends too.
    const late = hop();
    beforeRead();
    writeSoon(late);
    streamEnded(late);
    afterRead();
    assert.equal(late.flushes, 0);
    await nextIteration();
    assert.equal(late.flushes, 1);
  });

  it('writes no end early in a busy loop, nor outside a read', async () => {
    await iterationOf(2);
    const h = hop();
    beforeRead();
    writeSoon(h);
    streamEnded(h);
    afterRead();
    assert.equal(h.flushes, 0, 'a busy loop writes at the check phase');
    await nextIteration();
    assert.equal(h.flushes, 1);
    await iterationOf(1);
    writeSoon(h);
    streamEnded(h);
    assert.equal(h.flushes, 1, 'a timer\'s frames wait for the check phase');
    await nextIteration();
    assert.equal(h.flushes, 2);
  });

  it('goes back to writing at once once an iteration reads one socket again', async () => {
    await iterationOf(2);
    const busy = hop();
    read(busy);
    await nextIteration();
    assert.equal(busy.flushes, 1);
    const quiet = hop();
    read(quiet);
    assert.equal(quiet.flushes, 1);
    await nextIteration();
  });
});
