// The HPACK encoder the outbound proxy writes header blocks with: RFC 7541
// Appendix C's octets and tables (C.3 to C.6), its indexing policy as the
// blocks show it, table size updates, and a real nghttp2 peer (node:http2)
// reading its blocks over a raw connection, with the table reused across
// streams and resized by the peer's SETTINGS.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { CLIENT_PREFACE, FRAME_HEADER_LENGTH, Flag, FrameType, Setting } from '../../src/h2/frame-types.ts';
import { EMPTY_SETTINGS, SETTINGS_ACK, headersFrame } from '../../src/h2/frames.ts';
import { settingValue } from '../../src/relay/frame-parser.ts';
import { HpackDecoder } from '../../src/relay/hpack-decoder.ts';
import { huffmanLength } from '../../src/relay/hpack-huffman.ts';
import { HpackEncoder } from '../../src/relay/hpack-encoder.ts';
import { CHAINS, type Field } from '../support/rfc7541-vectors.ts';

const hex = (s: string): string => s.replace(/\s+/g, '');
const flat = (fields: Field[]): string[] => fields.flat();

/** A grpc-js unary call's request fields (@grpc/grpc-js 1.x, no deadline, no metadata). */
const GRPC_REQUEST = [
  ':method', 'POST',
  ':scheme', 'http',
  ':path', '/helloworld.Greeter/SayHello',
  ':authority', 'localhost:50051',
  'grpc-accept-encoding', 'identity,deflate,gzip',
  'accept-encoding', 'identity',
  'user-agent', 'grpc-node-js/1.10.9',
  'content-type', 'application/grpc',
  'te', 'trailers',
];

describe('HPACK encoder: RFC 7541 Appendix C', () => {
  for (const [label, chain] of Object.entries(CHAINS)) {
    // C.3/C.4 hold request fields rpcscope's policy indexes (:authority,
    // cache-control, custom-key); C.5/C.6 index date and set-cookie, which the
    // policy sends without indexing, so those run with a policy that indexes all.
    const responses = chain.tableSize === 256;
    it(`${label}${responses ? ' (a policy indexing every field)' : ''}`, () => {
      const e = new HpackEncoder(chain.tableSize, { huffman: chain.huffman, indexing: responses ? () => 'incremental' : undefined });
      const d = new HpackDecoder(chain.tableSize);
      chain.lists.forEach((fields, i) => {
        const block = e.encode(flat(fields));
        assert.equal(block.toString('hex'), hex(chain.blocks[i]!), `block ${i + 1}`);
        assert.deepEqual(e.entries(), chain.tables[i], `table after block ${i + 1}`);
        assert.equal(e.tableSize, chain.sizes[i], `table size after block ${i + 1}`);
        assert.deepEqual([...d.decode(block)], flat(fields));
      });
    });
  }
});

describe('HPACK encoder: indexing policy', () => {
  /** The representation of each field of a block, from its first octet (§6); a field ends where a prefix of the block decodes to one more field. */
  function kinds(block: Buffer): string[] {
    const out: string[] = [];
    let fields = 0;
    for (let at = 0, end = 1; end <= block.length; end++) {
      let n = -1;
      try {
        n = new HpackDecoder().decode(block.subarray(0, end)).length / 2;
      } catch {
        // a field cut short
      }
      if (n !== fields + 1) continue;
      const b = block[at]!;
      out.push(b & 0x80 ? 'indexed' : b & 0x40 ? 'incremental' : b & 0x10 ? 'never' : 'without');
      fields = n;
      at = end;
    }
    return out;
  }

  it('indexes what repeats, sends per-call and sensitive fields as literals, never-indexed where asked', () => {
    const e = new HpackEncoder();
    const list = [
      ':method', 'POST',
      ':path', '/helloworld.Greeter/SayHello',
      ':path', '/search?q=rpcscope',
      'authorization', 'Bearer abc',
      'cookie', 'id=1',
      'cookie', 'session=0123456789abcdefghij',
      'grpc-timeout', '99m',
      'traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      'x-custom', 'kept',
      'x-secret', 'asked never indexed',
      'x-big', 'b'.repeat(1100),
    ];
    const block = e.encode(list, [9]);
    assert.deepEqual(kinds(block), ['indexed', 'incremental', 'without', 'never', 'never', 'incremental', 'without', 'without', 'incremental', 'never', 'without']);
    assert.deepEqual(e.entries(), [['x-custom', 'kept'], ['cookie', 'session=0123456789abcdefghij'], [':path', '/helloworld.Greeter/SayHello']]);
    const d = new HpackDecoder();
    assert.deepEqual([...d.decode(block)], list);
    assert.deepEqual(d.neverIndexed, [3, 4, 9]);
  });

  it('refers to a field it indexed with one octet, and a never-indexed position stays a literal even so', () => {
    const e = new HpackEncoder();
    const d = new HpackDecoder();
    d.decode(e.encode(['x-custom', 'kept']));
    const again = e.encode(['x-custom', 'kept']);
    assert.equal(again.toString('hex'), 'be', 'index 62');
    assert.deepEqual([...d.decode(again)], ['x-custom', 'kept']);
    const never = e.encode(['x-custom', 'kept'], [0]);
    assert.deepEqual([...never.subarray(0, 2)], [0x10 | 15, 62 - 15], 'never indexed, name index 62');
    assert.deepEqual([...d.decode(never)], ['x-custom', 'kept']);
    assert.deepEqual(d.neverIndexed, [0]);
  });

  it('strings go Huffman coded unless that is longer', () => {
    const e = new HpackEncoder();
    // 'www.example.com' is 12 octets coded (C.4); octets 0x80–0xff code to 20 bits or more.
    assert.equal(e.encode(['x-a', 'www.example.com']).length, 1 + 1 + 3 + 1 + 12);
    const binary = '\xff\xfe\xfd';
    const block = e.encode(['x-b', binary]);
    assert.equal(block[block.length - 4], 3, 'raw length 3, no Huffman flag');
    assert.equal(block.subarray(-3).toString('latin1'), binary);
  });
});

describe('HPACK encoder: table size', () => {
  it('a smaller size evicts at once and starts the next block with one update; several changes send the smallest, then the final', () => {
    const e = new HpackEncoder();
    const d = new HpackDecoder();
    d.decode(e.encode(GRPC_REQUEST));
    assert.ok(e.tableSize > 0);
    e.setMaxTableSize(0);
    assert.equal(e.tableSize, 0);
    let block = e.encode(GRPC_REQUEST);
    assert.equal(block[0], 0x20, 'size update to 0');
    assert.deepEqual([...d.decode(block)], GRPC_REQUEST);
    assert.deepEqual(d.entries(), []);
    assert.equal(e.encode(GRPC_REQUEST)[0], 0x83, 'no update when nothing changed');

    e.setMaxTableSize(100);
    e.setMaxTableSize(4096);
    block = e.encode(GRPC_REQUEST);
    assert.deepEqual([...block.subarray(0, 5)], [0x3f, 100 - 31, 0x3f, 0xe1, 0x1f], 'update to 100, then to 4096');
    assert.deepEqual([...d.decode(block)], GRPC_REQUEST);
    assert.deepEqual(d.entries(), e.entries());
    assert.ok(e.tableSize > 100);
  });

  it('keeps at most its limit however large the peer\'s setting', () => {
    const e = new HpackEncoder();
    e.setMaxTableSize(65_536);
    assert.equal(e.maxTableSize, 4096);
    assert.equal(e.encode([':method', 'GET']).toString('hex'), '82', 'no update: the table did not change');
    const wide = new HpackEncoder(4096, { limit: 65_536 });
    wide.setMaxTableSize(65_536);
    assert.equal(wide.encode([':method', 'GET']).toString('hex'), '3fe1ff03' + '82');
  });
});

describe('HPACK encoder: compression', () => {
  it('a grpc-js request\'s fields the second time on a connection take one octet a field', () => {
    const e = new HpackEncoder();
    const first = e.encode(GRPC_REQUEST);
    const second = e.encode(GRPC_REQUEST);
    // 9 fields: 2 static, 7 dynamic, one octet each; the first block is 119
    // octets (Huffman coded, 211 octets of names and values).
    assert.equal(second.length, 9);
    assert.equal(first.length, 119);
    const withDeadline = [...GRPC_REQUEST, 'grpc-timeout', '99m'];
    e.encode(withDeadline);
    const again = e.encode(withDeadline);
    // grpc-timeout is not indexed by the policy: its name goes out each call,
    // Huffman coded: 1 + (1 + 9) + (1 + 3) octets, 24 for the block.
    assert.equal(again.length, 9 + 1 + 1 + huffmanLength('grpc-timeout') + 1 + huffmanLength('99m'));
    assert.equal(again.length, 24);
  });

  it('a field found whole in the last block at the same position is referred to the same way, and written anew once evicted', () => {
    const e = new HpackEncoder();
    const d = new HpackDecoder();
    const list = [':method', 'POST', 'x-call', 'one'];
    assert.deepEqual(d.decode(e.encode(list)), list);
    assert.equal(e.encode(list).toString('hex'), '83be', 'static :method POST, then the dynamic entry');
    // The peer's table to 0 evicts x-call; the next block must write it out again, not refer to it.
    e.setMaxTableSize(0);
    d.setLimit(0);
    const again = e.encode(list);
    assert.deepEqual(d.decode(again), list);
    assert.equal(d.entries().length, 0);
  });

  it('a per-call literal comes out the same octets each block, and a field too large for a small table is indexed once the table grows', () => {
    const e = new HpackEncoder(256);
    const d = new HpackDecoder(256);
    // x-big: 5 + 40 + 32 = 77 octets, over a quarter of 256: a literal without indexing there.
    const list = ['date', 'Sat, 05 Dec 2026 14:10:00 GMT', 'x-big', 'v'.repeat(40)];
    const first = e.encode(list);
    assert.deepEqual(d.decode(first), list);
    assert.deepEqual(e.encode(list), first);
    assert.equal(d.entries().length, 0);
    e.setMaxTableSize(4096);
    d.setLimit(4096);
    assert.deepEqual(d.decode(e.encode(list)), list);
    assert.deepEqual(d.entries(), [['x-big', 'v'.repeat(40)]], 'indexed now that it is under a quarter of the table');
    assert.equal(e.encode(list).length, e.encode(['date', list[1]!]).length + 1, 'x-big now one octet');
  });

  it('a first field of an empty name and value reads back as such (nothing remembered yet)', () => {
    const e = new HpackEncoder();
    assert.deepEqual(new HpackDecoder().decode(e.encode(['', ''])), ['', '']);
  });
});

/** A raw HTTP/2 client connection: it writes the frames given, ACKs the server's SETTINGS and reports their table size. */
class RawClient {
  readonly socket: net.Socket;
  private pending = Buffer.alloc(0);
  /** The table size of each SETTINGS frame the server sent (undefined: not set in that frame). */
  readonly tableSizes: (number | undefined)[] = [];
  private waiter: (() => void) | undefined;
  goaway: Buffer | undefined;

  constructor(port: number, private readonly onTableSize: (size: number) => void) {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (chunk: Buffer) => this.read(chunk));
  }

  /** Resolves once the server has sent `n` SETTINGS frames (each ACKed), with the table size the last set. */
  async settings(n: number): Promise<number | undefined> {
    while (this.tableSizes.length < n) await new Promise<void>((r) => (this.waiter = r));
    return this.tableSizes[n - 1];
  }

  private read(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= FRAME_HEADER_LENGTH) {
      const length = this.pending.readUIntBE(0, 3);
      if (this.pending.length < FRAME_HEADER_LENGTH + length) return;
      const type = this.pending[3]!;
      const flags = this.pending[4]!;
      const payload = this.pending.subarray(FRAME_HEADER_LENGTH, FRAME_HEADER_LENGTH + length);
      this.pending = this.pending.subarray(FRAME_HEADER_LENGTH + length);
      if (type === FrameType.GOAWAY) this.goaway = Buffer.from(payload);
      if (type !== FrameType.SETTINGS || flags & Flag.ACK) continue;
      const size = settingValue(payload, Setting.HEADER_TABLE_SIZE);
      if (size !== undefined) this.onTableSize(size);
      this.socket.write(SETTINGS_ACK);
      this.tableSizes.push(size);
      this.waiter?.();
    }
  }
}

describe('HPACK encoder: a real nghttp2 peer (node:http2) reads its blocks', () => {
  let server: http2.Http2Server;
  let session: http2.ServerHttp2Session | undefined;
  const received: { raw: string[]; sensitive: string[] }[] = [];
  let onStream: (() => void) | undefined;

  before(async () => {
    // The server starts with a 1,024-octet table: the encoder's first block must shrink it (§4.2).
    server = http2.createServer({ settings: { headerTableSize: 1024 } });
    server.on('session', (s) => (session = s));
    // Node passes the fields as received, rawHeaders, fourth (its types stop at three).
    server.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _flags: number, ...more: unknown[]) => {
      received.push({ raw: more[0] as string[], sensitive: ((headers as Record<symbol, unknown>)[http2.sensitiveHeaders] as string[] | undefined) ?? [] });
      stream.respond({ ':status': 200 }, { endStream: true });
      onStream?.();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  after(() => new Promise<void>((r) => {
    session?.destroy();
    server.close(() => r());
  }));

  it('gets exactly the fields sent, over streams sharing the dynamic table, through table size changes', async () => {
    const port = (server.address() as net.AddressInfo).port;
    const encoder = new HpackEncoder();
    const client = new RawClient(port, (size) => encoder.setMaxTableSize(size));
    client.socket.write(Buffer.concat([CLIENT_PREFACE, EMPTY_SETTINGS]));
    assert.equal(await client.settings(1), 1024);

    const sent: { list: string[]; never: number[] }[] = [];
    let streamId = 1;
    const request = async (list: string[], never: number[] = []): Promise<Buffer> => {
      const block = encoder.encode(list, never);
      sent.push({ list, never });
      let timer: NodeJS.Timeout | undefined;
      const arrived = new Promise<void>((resolve, reject) => {
        onStream = resolve;
        timer = setTimeout(() => reject(new Error(`stream ${streamId} not received; GOAWAY ${client.goaway?.toString('hex')}`)), 5000);
      });
      client.socket.write(headersFrame(streamId, block, true));
      streamId += 2;
      await arrived.finally(() => clearTimeout(timer));
      return block;
    };
    const call = (n: number, extra: string[] = []): string[] => [...GRPC_REQUEST, 'x-call', `call-${n}`, 'grpc-timeout', `${n}m`, ...extra];

    const first = await request(call(1, ['authorization', 'Bearer rpcscope-test-token']));
    assert.equal(first.subarray(0, 3).toString('hex'), '3fe107', 'starts with a size update to 1,024');
    const second = await request(call(2, ['authorization', 'Bearer rpcscope-test-token']));
    await request(call(3, ['x-api-key', 'k-123']), [11]);
    assert.ok(second.length < first.length / 3, `second block ${second.length} octets, first ${first.length}`);

    // The server shrinks its table to 0, then, before the client writes again, back to 4,096.
    session!.settings({ headerTableSize: 0 });
    assert.equal(await client.settings(2), 0);
    assert.equal(encoder.tableSize, 0);
    assert.equal((await request(call(4)))[0], 0x20, 'starts with a size update to 0');
    session!.settings({ headerTableSize: 256 });
    session!.settings({ headerTableSize: 4096 });
    assert.equal(await client.settings(4), 4096);
    assert.equal((await request(call(5))).subarray(0, 6).toString('hex'), '3fe101' + '3fe11f', 'size updates to 256, then 4,096');
    const reused = await request(call(6));
    assert.ok(reused.length <= second.length, `block after the table came back: ${reused.length} octets`);

    assert.equal(client.goaway, undefined);
    assert.equal(received.length, sent.length);
    received.forEach((got, i) => {
      assert.deepEqual(got.raw, sent[i]!.list, `stream ${2 * i + 1}`);
    });
    assert.deepEqual(received[0]!.sensitive, ['authorization']);
    assert.deepEqual(received[2]!.sensitive, ['x-api-key']);
    client.socket.destroy();
  });
});
