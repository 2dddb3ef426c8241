// A strict reader of HTTP/1.1 message framing, for smuggling tests. Node's own
// parser would frame the bytes as well, but it hides them; a test that must show
// where one request ends and the next begins reads them here: the head up to its
// blank line, then a body of Content-Length octets, or chunks whose every size
// line and CRLF is checked (RFC 9112 §6–7). Anything else is an error, never a guess.

export interface H1Message {
  /** `GET /a HTTP/1.1`, or `HTTP/1.1 200 OK`. */
  startLine: string;
  /** Header fields as they came, in order. */
  headers: [name: string, value: string][];
  framing: 'chunked' | 'content-length' | 'none';
  /** The body, chunked framing removed. */
  body: Buffer;
  /** Exactly the bytes the message took, head and framed body. */
  raw: Buffer;
}

export type ReadResult = { message: H1Message; next: number } | { incomplete: true } | { error: string };

const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');
const FIELD = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$/;
const MAX_HEAD = 64 * 1024;

/** The values of a header field, by name in any case. */
export function field(message: H1Message, name: string): string[] {
  return message.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
}

/**
 * The message that starts at `from` in `bytes`. `kind` says which start line to
 * expect; a response to HEAD, or a 1xx, 204 or 304, has no body (`bodiless`).
 */
export function readMessage(bytes: Buffer, from: number, kind: 'request' | 'response', bodiless = false): ReadResult {
  const headEnd = bytes.indexOf(HEAD_END, from);
  if (headEnd < 0) return bytes.length - from > MAX_HEAD ? { error: 'head over 64 KiB' } : { incomplete: true };
  const lines = bytes.subarray(from, headEnd).toString('latin1').split('\r\n');
  const startLine = lines[0]!;
  const start = kind === 'request' ? /^[A-Z]+ \S+ HTTP\/1\.1$/ : /^HTTP\/1\.[01] (\d{3}) ?.*$/;
  const m = start.exec(startLine);
  if (!m) return { error: `bad start line ${JSON.stringify(startLine)}` };
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const f = FIELD.exec(line);
    if (!f || /[\r\n]/.test(line)) return { error: `bad field line ${JSON.stringify(line)}` };
    headers.push([f[1]!, f[2]!]);
  }
  const message = { startLine, headers, framing: 'none', body: Buffer.alloc(0), raw: Buffer.alloc(0) } as H1Message;
  const te = field(message, 'transfer-encoding');
  const cl = field(message, 'content-length');
  let pos = headEnd + HEAD_END.length;
  const status = kind === 'response' ? Number(m[1]) : 0;
  if (bodiless || (status >= 100 && status < 200) || status === 204 || status === 304) {
    if (te.length || cl.length) return { error: 'framing on a message that has no body' };
  } else if (te.length) {
    if (cl.length) return { error: 'both Transfer-Encoding and Content-Length' };
    if (te.length !== 1 || te[0]!.toLowerCase() !== 'chunked') return { error: `Transfer-Encoding ${JSON.stringify(te)}` };
    message.framing = 'chunked';
    const chunks: Buffer[] = [];
    for (;;) {
      const lineEnd = bytes.indexOf(CRLF, pos);
      if (lineEnd < 0) return { incomplete: true };
      const sizeLine = bytes.subarray(pos, lineEnd).toString('latin1');
      if (!/^[0-9a-fA-F]{1,8}$/.test(sizeLine)) return { error: `bad chunk size line ${JSON.stringify(sizeLine)}` };
      const size = parseInt(sizeLine, 16);
      pos = lineEnd + 2;
      if (size === 0) break;
      if (bytes.length < pos + size + 2) return { incomplete: true };
      chunks.push(bytes.subarray(pos, pos + size));
      if (!bytes.subarray(pos + size, pos + size + 2).equals(CRLF)) return { error: 'chunk data not followed by CRLF' };
      pos += size + 2;
    }
    // The trailer section: field lines up to an empty line.
    for (;;) {
      const lineEnd = bytes.indexOf(CRLF, pos);
      if (lineEnd < 0) return { incomplete: true };
      const line = bytes.subarray(pos, lineEnd).toString('latin1');
      pos = lineEnd + 2;
      if (line === '') break;
      if (!FIELD.test(line)) return { error: `bad trailer line ${JSON.stringify(line)}` };
    }
    message.body = Buffer.concat(chunks);
  } else if (cl.length) {
    if (cl.length !== 1 || !/^\d+$/.test(cl[0]!)) return { error: `Content-Length ${JSON.stringify(cl)}` };
    message.framing = 'content-length';
    const n = Number(cl[0]);
    if (bytes.length < pos + n) return { incomplete: true };
    message.body = bytes.subarray(pos, pos + n);
    pos += n;
  } else if (kind === 'response') {
    return { error: 'a response without length: read to the close, which this reader does not do' };
  }
  message.raw = bytes.subarray(from, pos);
  return { message, next: pos };
}

/** Every whole message in `bytes`, and what is left after them (incomplete, or where an error stopped). */
export function readMessages(bytes: Buffer, kind: 'request' | 'response'): { messages: H1Message[]; rest: Buffer; error?: string } {
  const messages: H1Message[] = [];
  let at = 0;
  for (;;) {
    if (at === bytes.length) return { messages, rest: Buffer.alloc(0) };
    const r = readMessage(bytes, at, kind);
    if ('incomplete' in r) return { messages, rest: bytes.subarray(at) };
    if ('error' in r) return { messages, rest: bytes.subarray(at), error: r.error };
    messages.push(r.message);
    at = r.next;
  }
}
