// A raw HTTP/1.1 client connection for the relay's tests: what it sends goes on
// the wire as written, and the answers are read back as they came, framing and all.
import net from 'node:net';
import { BodyReader } from '../../src/h1/body-reader.ts';
import { HeadReader, parseResponseHead, responseFraming } from '../../src/h1/message-head.ts';

export interface Answer {
  status: number;
  /** The whole response as received, head and body. */
  raw: Buffer;
  /** The body's payload, framing taken off. */
  body: Buffer;
}

/** The responses to `methods`' requests in `buf`, once all have arrived whole. */
export function answers(buf: Buffer, methods: readonly string[]): Answer[] | undefined {
  const out: Answer[] = [];
  let at = 0;
  for (const method of methods) {
    const start = at;
    for (;;) {
      const heads = new HeadReader(1 << 16);
      const end = heads.read(buf, at);
      if (end < 0) return undefined;
      at = end;
      const head = parseResponseHead(heads.take());
      if (head.status < 200) continue;
      const parts: Buffer[] = [];
      const body = new BodyReader(1 << 16);
      body.onPayload = (s) => parts.push(Buffer.from(s));
      body.begin(responseFraming(head, method));
      at = body.read(buf, at);
      if (!body.done) return undefined;
      out.push({ status: head.status, raw: buf.subarray(start, at), body: Buffer.concat(parts) });
      break;
    }
  }
  return out;
}

/** A raw client connection: what it sends goes as written, and what comes back is read as it came. */
export class RawClient {
  private readonly socket: net.Socket;
  private buf = Buffer.alloc(0);
  readonly closed: Promise<void>;
  /** The connection closed (either side ended it). */
  isClosed = false;

  constructor(port: number) {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (d: Buffer) => (this.buf = Buffer.concat([this.buf, d])));
    this.closed = new Promise((resolve) => this.socket.once('close', () => {
      this.isClosed = true;
      resolve();
    }));
  }

  /** Sends `bytes` and waits for the answers to `methods`. */
  async send(bytes: string | Buffer, methods: readonly string[], timeoutMs = 5000): Promise<Answer[]> {
    const from = this.buf.length;
    this.socket.write(bytes);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = answers(this.buf.subarray(from), methods);
      if (got) return got;
      if (this.isClosed) throw new Error(`the connection closed before whole answers; got ${JSON.stringify(this.buf.subarray(from).toString('latin1'))}`);
      if (Date.now() > deadline) throw new Error(`no whole answers within ${timeoutMs} ms; got ${JSON.stringify(this.buf.subarray(from).toString('latin1'))}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Resolves once what came back holds `text`. */
  async waitFor(text: string, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.buf.toString('latin1').includes(text)) {
      if (Date.now() > deadline) throw new Error(`no ${JSON.stringify(text)} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Bytes written but not yet taken by the kernel. */
  get unsent(): number {
    return this.socket.writableLength;
  }

  close(): void {
    this.socket.destroy();
  }
}
