// Properties of the first-bytes sniff, over real loopback sockets: however the
// client's first bytes are cut into writes, HTTP/2 is decided exactly when they
// begin with the connection preface, and every byte is put back for the server
// that takes the connection.
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { H2_PREFACE, sniffHttpVersion } from '../../src/listen/sniff.ts';
import { readCorpus, splitAt } from '../support/corpus.ts';

type Sniffed = { h2: boolean; bytes: Buffer };

describe('sniffHttpVersion properties', () => {
  let server: net.Server;
  let next: ((s: Sniffed) => void) | undefined;
  before(async () => {
    server = net.createServer((socket) =>
      sniffHttpVersion(socket, (h2) => {
        const chunks: Buffer[] = [];
        socket.on('data', (d: Buffer) => chunks.push(d));
        socket.on('end', () => next?.({ h2, bytes: Buffer.concat(chunks) }));
        socket.resume();
      }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  async function sniff(pieces: Buffer[]): Promise<Sniffed> {
    const done = new Promise<Sniffed>((r) => (next = r));
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise((r) => socket.once('connect', r));
    for (const p of pieces) {
      socket.write(p);
      await new Promise((r) => setImmediate(r));
    }
    socket.end();
    return done;
  }

  const firstBytes = fc.oneof(
    fc.uint8Array({ maxLength: 40 }).map((tail) => Buffer.concat([H2_PREFACE, tail])),
    fc.tuple(fc.nat(H2_PREFACE.length - 1), fc.uint8Array({ minLength: 1, maxLength: 40 })).map(([keep, tail]) => Buffer.concat([H2_PREFACE.subarray(0, keep), Buffer.from(tail)])),
    fc.constantFrom('GET / HTTP/1.1\r\nhost: a\r\n\r\n', 'PRI / HTTP/1.1\r\n\r\n', 'POST /x HTTP/1.1\r\n').map((s) => Buffer.from(s)),
  );

  it('decides HTTP/2 exactly on the preface, for any cut of the first bytes, and puts every byte back', async () => {
    await fc.assert(
      fc.asyncProperty(firstBytes, fc.array(fc.nat(), { maxLength: 6 }), async (bytes, cuts) => {
        // A proper prefix of the preface is undecided until more comes: only whole inputs that leave it are judged.
        fc.pre(bytes.length >= H2_PREFACE.length || bytes.compare(H2_PREFACE, 0, bytes.length, 0, bytes.length) !== 0);
        const got = await sniff(splitAt(bytes, cuts).filter((p) => p.length > 0));
        assert.equal(got.h2, bytes.subarray(0, H2_PREFACE.length).equals(H2_PREFACE));
        assert.deepEqual(got.bytes, bytes);
      }),
      { numRuns: 40 },
    );
  });

  it('replays its corpus', async () => {
    for (const { input, why } of readCorpus<{ hex: string; cuts: number[]; h2: boolean }>('sniff')) {
      const bytes = Buffer.from(input.hex, 'hex');
      const got = await sniff(splitAt(bytes, input.cuts).filter((p) => p.length > 0));
      assert.equal(got.h2, input.h2, why);
      assert.deepEqual(got.bytes, bytes, why);
    }
  });
});
