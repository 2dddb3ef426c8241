// The strict HTTP/1.1 head parser: a request or response head read as it
// arrives, in as many pieces as the socket gives, then parsed whole (heads are
// small: 16 KiB by default, as Node's --max-http-header-size). It keeps the
// head's bytes, with each field line's offsets, so that a relay passes the head
// on as it came and drops only the lines that must go (hop-by-hop fields).
// Framing follows RFC 9112 §6.3 and refuses every shape two parsers could read
// two ways (h1-error.ts lists them).
import { H1Error } from './h1-error.ts';
import { allIn, COLON, CR, FIELD_VALUE, HTAB, LF, SP, TARGET, TCHAR } from './h1-syntax.ts';

/** How a message's body is delimited (RFC 9112 §6.3). */
export type BodyFraming =
  | { readonly kind: 'none' }
  | { readonly kind: 'length'; readonly length: number }
  | { readonly kind: 'chunked' }
  /** A response read until the app closes the connection (§6.3, item 8). */
  | { readonly kind: 'close' };

export const NO_BODY: BodyFraming = { kind: 'none' };
export const CHUNKED: BodyFraming = { kind: 'chunked' };
export const UNTIL_CLOSE: BodyFraming = { kind: 'close' };

/** One field line of a head: name lowercased, value without its surrounding whitespace. */
export interface HeadField {
  readonly name: string;
  readonly value: string;
  /** Where the line starts in the head's bytes, and where it ends, past its CRLF. */
  readonly start: number;
  readonly end: number;
}

interface MessageHead {
  /** The head's bytes, start line through the empty line that ends it. */
  readonly raw: Buffer;
  readonly fields: readonly HeadField[];
  /** The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1. */
  readonly minor: number;
  /** The Connection field's options, lowercased (RFC 9110 §7.6.1). */
  readonly connection: readonly string[];
  /** Whether the connection may carry another message after this one. */
  readonly keepAlive: boolean;
}

export interface RequestHead extends MessageHead {
  readonly method: string;
  readonly target: string;
  readonly framing: BodyFraming;
  /** The protocol asked for with `Connection: upgrade` (WebSocket, h2c), if any. */
  readonly upgrade: string | undefined;
  /** `Expect: 100-continue`: the client waits for a 100 (or the answer) before its body. */
  readonly expectContinue: boolean;
}

export interface ResponseHead extends MessageHead {
  readonly status: number;
  readonly reason: string;
}

/** Reads a head's bytes out of the socket's chunks, up to the empty line that ends it. */
export class HeadReader {
  private parts: Buffer[] = [];
  private size = 0;
  /** Bytes of the line being read so far, its CR included. */
  private lineBytes = 0;
  private lastWasCR = false;
  /** Whether the start line has begun: empty lines before it are skipped (RFC 9112 §2.2). */
  private started = false;

  constructor(private readonly maxBytes: number) {}

  /**
   * Takes head bytes from `chunk` at `from`: the index just past the head's end
   * when it ended in this chunk (then `take()` gives it), or -1 when the whole
   * rest of the chunk was head and more is needed. Throws H1Error.
   */
  read(chunk: Buffer, from: number): number {
    let at = from;
    let partStart = from;
    while (at < chunk.length) {
      const lf = chunk.indexOf(LF, at);
      const stop = lf < 0 ? chunk.length : lf;
      // A CR anywhere but just before the LF is refused by the line's own syntax, when parsed.
      this.lineBytes += stop - at;
      if (stop > at) this.lastWasCR = chunk[stop - 1] === CR;
      if (lf < 0) {
        at = chunk.length;
        break;
      }
      if (!this.lastWasCR) throw new H1Error('bare_lf');
      at = lf + 1;
      const empty = this.lineBytes === 1;
      this.lineBytes = 0;
      this.lastWasCR = false;
      if (empty && !this.started) {
        // An empty line before the start line: skipped, with any of it kept from an earlier chunk.
        partStart = at;
        this.parts = [];
        this.size = 0;
        continue;
      }
      this.started = true;
      if (empty) {
        this.keep(chunk, partStart, at);
        return at;
      }
    }
    this.keep(chunk, partStart, at);
    return -1;
  }

  /** The head just read, as one buffer; the reader is then ready for the next. */
  take(): Buffer {
    const raw = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
    this.parts = [];
    this.size = 0;
    this.started = false;
    return raw;
  }

  /** Bytes held of a head not yet complete. */
  get pending(): number {
    return this.size;
  }

  private keep(chunk: Buffer, start: number, end: number): void {
    if (end <= start) return;
    this.size += end - start;
    if (this.size > this.maxBytes) throw new H1Error('head_too_large', `over ${this.maxBytes} bytes`);
    this.parts.push(chunk.subarray(start, end));
  }
}

interface Lines {
  start: string;
  fields: HeadField[];
}

/**
 * The field lines of a head from `at` (each ending in CRLF, the last line
 * empty), checking each step apart: the reading that names what is wrong with a
 * head, taken whenever `readFields` meets a byte it does not expect.
 */
export function readFieldsChecked(raw: Buffer, at: number, request: boolean): HeadField[] {
  const fields: HeadField[] = [];
  for (;;) {
    const lf = raw.indexOf(LF, at);
    if (lf === at + 1) break; // the empty line
    if (raw.indexOf(CR, at) !== lf - 1) throw new H1Error('bare_cr');
    const b = raw[at]!;
    if (b === SP || b === HTAB) throw new H1Error(request ? 'obs_fold' : 'field_value', 'obs-fold');
    const colon = raw.indexOf(COLON, at);
    if (colon < 0 || colon > lf) throw new H1Error('field_name', 'no colon');
    const name = raw.toString('latin1', at, colon);
    if (!allIn(TCHAR, name)) throw new H1Error('field_name', JSON.stringify(name));
    let vs = colon + 1;
    let ve = lf - 1;
    while (vs < ve && (raw[vs] === SP || raw[vs] === HTAB)) vs++;
    while (ve > vs && (raw[ve - 1] === SP || raw[ve - 1] === HTAB)) ve--;
    for (let i = vs; i < ve; i++) if (FIELD_VALUE[raw[i]!] !== 1) throw new H1Error('field_value', `in ${name}`);
    fields.push({ name: name.toLowerCase(), value: raw.toString('latin1', vs, ve), start: at, end: lf + 1 });
    at = lf + 1;
  }
  return fields;
}

/**
 * Field names read on most calls, each kept as one string: a field whose name
 * matches one (in any case) is given it, so reading the name allocates nothing
 * and comparisons with it are of one string.
 */
const KNOWN_NAMES = [
  'accept', 'accept-encoding', 'accept-language', 'accept-ranges', 'access-control-allow-origin', 'authorization', 'cache-control',
  'connection', 'content-encoding', 'content-length', 'content-type', 'cookie', 'date', 'etag', 'expect', 'expires', 'host',
  'if-modified-since', 'if-none-match', 'keep-alive', 'last-modified', 'location', 'origin', 'pragma', 'referer', 'server',
  'set-cookie', 'te', 'traceparent', 'tracestate', 'transfer-encoding', 'upgrade', 'user-agent', 'vary', 'x-forwarded-for',
  'x-request-id',
];
const NAMES_BY_LENGTH: string[][] = [];
for (const name of KNOWN_NAMES) (NAMES_BY_LENGTH[name.length] ??= []).push(name);

/** The lowercased name of the field whose name (all tchar) is raw[start, end). */
function fieldName(raw: Buffer, start: number, end: number): string {
  const known = NAMES_BY_LENGTH[end - start];
  if (known !== undefined) {
    for (const name of known) {
      let i = 0;
      for (; start + i < end; i++) {
        const b = raw[start + i]!;
        // tchar's letters are ASCII: A-Z lowercase by their 0x20 bit, as toLowerCase does.
        if ((b >= 0x41 && b <= 0x5a ? b | 0x20 : b) !== name.charCodeAt(i)) break;
      }
      if (start + i === end) return name;
    }
  }
  return raw.toString('latin1', start, end).toLowerCase();
}

/**
 * The field lines of a head from `at`, in one pass over each line's bytes; or
 * undefined at the first byte it does not expect, for `readFieldsChecked` to
 * read the head again and give the same fields or the error that names the fault.
 */
export function readFields(raw: Buffer, at: number): HeadField[] | undefined {
  const fields: HeadField[] = [];
  for (;;) {
    if (raw[at] === CR && raw[at + 1] === LF) return fields; // the empty line
    // field-name ":" OWS field-value OWS CRLF, the name all tchar (so neither ':' nor whitespace), the value all field-value bytes.
    let i = at;
    while (TCHAR[raw[i]!] === 1) i++;
    if (i === at || raw[i] !== COLON) return undefined;
    const nameEnd = i++;
    while (raw[i] === SP || raw[i] === HTAB) i++;
    const vs = i;
    while (FIELD_VALUE[raw[i]!] === 1) i++;
    if (raw[i] !== CR || raw[i + 1] !== LF) return undefined;
    let ve = i;
    while (ve > vs && (raw[ve - 1] === SP || raw[ve - 1] === HTAB)) ve--;
    fields.push({ name: fieldName(raw, at, nameEnd), value: raw.toString('latin1', vs, ve), start: at, end: i + 2 });
    at = i + 2;
  }
}

/** Splits a head (each line ending in CRLF, the last line empty) into its start line and fields. */
function splitHead(raw: Buffer, request: boolean): Lines {
  const first = raw.indexOf(LF);
  if (raw.indexOf(CR) !== first - 1) throw new H1Error('bare_cr');
  const start = raw.toString('latin1', 0, first - 1);
  return { start, fields: readFields(raw, first + 1) ?? readFieldsChecked(raw, first + 1, request) };
}

/** The comma-separated members of every field named `name`, trimmed, empty ones dropped (RFC 9110 §5.6.1). */
export function listMembers(fields: readonly HeadField[], name: string): string[] {
  const out: string[] = [];
  for (const f of fields) {
    if (f.name !== name) continue;
    for (const m of f.value.split(',')) {
      const t = m.trim();
      if (t !== '') out.push(t);
    }
  }
  return out;
}

function version(text: string, reason: 'request_line' | 'status_line'): number {
  if (text.length !== 8 || !text.startsWith('HTTP/') || text[6] !== '.') throw new H1Error(reason, 'HTTP-version');
  const major = text.charCodeAt(5) - 0x30;
  const minor = text.charCodeAt(7) - 0x30;
  if (major < 0 || major > 9 || minor < 0 || minor > 9) throw new H1Error(reason, 'HTTP-version');
  // HTTP/1.2 and the like do not exist; Node's parser refuses them too.
  if (major !== 1 || minor > 1) throw new H1Error('version', text);
  return minor;
}

/** A head's Connection options when it has no Connection field, as most responses and many requests: one list for all. */
const NO_OPTIONS: readonly string[] = Object.freeze([]);

function connectionOf(fields: readonly HeadField[], minor: number): { connection: readonly string[]; keepAlive: boolean } {
  const connection = fields.some((f) => f.name === 'connection') ? listMembers(fields, 'connection').map((t) => t.toLowerCase()) : NO_OPTIONS;
  const keepAlive = minor >= 1 ? !connection.includes('close') : connection.includes('keep-alive');
  return { connection, keepAlive };
}

/**
 * Content-Length's value, or undefined when absent. One value only: repeats,
 * even identical ones (RFC 9110 §8.6 lets a recipient merge them), are refused,
 * as Node's parser refuses them, so that the app never reads a length the
 * sidecar read otherwise.
 */
function contentLength(fields: readonly HeadField[], reason: 'content_length' | 'status_line'): number | undefined {
  let value: string | undefined;
  for (const f of fields) {
    if (f.name !== 'content-length') continue;
    if (value !== undefined) throw new H1Error(reason, 'more than one Content-Length');
    value = f.value;
  }
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,15}$/u.test(value)) throw new H1Error(reason, 'Content-Length');
  return Number(value);
}

/** Whether the transfer codings are a valid list whose last is chunked, chunked appearing once. */
function endsInChunked(codings: string[]): boolean {
  const lower = codings.map((c) => c.split(';')[0]!.trim().toLowerCase());
  if (!lower.every((c) => allIn(TCHAR, c))) return false;
  return lower.at(-1) === 'chunked' && lower.indexOf('chunked') === lower.length - 1;
}

/** Parses a request head `HeadReader` read. Throws H1Error, whose status the request is answered with. */
export function parseRequestHead(raw: Buffer): RequestHead {
  const { start, fields } = splitHead(raw, true);
  const sp1 = start.indexOf(' ');
  const sp2 = start.indexOf(' ', sp1 + 1);
  if (sp1 <= 0 || sp2 < 0 || start.indexOf(' ', sp2 + 1) >= 0) throw new H1Error('request_line');
  const method = start.slice(0, sp1);
  const target = start.slice(sp1 + 1, sp2);
  const minor = version(start.slice(sp2 + 1), 'request_line');
  if (!allIn(TCHAR, method) || !allIn(TARGET, target)) throw new H1Error('request_line');
  if (method === 'CONNECT') throw new H1Error('connect');
  if (target !== '*' && target.charCodeAt(0) !== 0x2f) throw new H1Error('absolute_form', target.slice(0, 64));
  if (target === '*' && method !== 'OPTIONS') throw new H1Error('request_line', 'asterisk-form is for OPTIONS');
  let hosts = 0;
  for (const f of fields) if (f.name === 'host') hosts++;
  if (hosts > 1 || (minor >= 1 && hosts === 0)) throw new H1Error('host');

  const hasTe = fields.some((f) => f.name === 'transfer-encoding');
  const length = contentLength(fields, 'content_length');
  let framing: BodyFraming;
  if (hasTe) {
    const codings = listMembers(fields, 'transfer-encoding');
    if (length !== undefined) throw new H1Error('cl_and_te');
    if (minor === 0 || !endsInChunked(codings)) throw new H1Error('transfer_encoding', codings.join(', '));
    framing = CHUNKED;
  } else framing = length === undefined || length === 0 ? NO_BODY : { kind: 'length', length };

  const { connection, keepAlive } = connectionOf(fields, minor);
  const upgrades = connection.includes('upgrade') ? listMembers(fields, 'upgrade') : [];
  const expect = fields.some((f) => f.name === 'expect') ? listMembers(fields, 'expect') : NO_OPTIONS;
  return {
    raw,
    fields,
    minor,
    connection,
    keepAlive,
    method,
    target,
    framing,
    upgrade: upgrades[0],
    expectContinue: minor >= 1 && expect.some((e) => e.toLowerCase() === '100-continue'),
  };
}

/** Parses a response head. A response the client could not read as the app meant it throws H1Error (`status_line`). */
export function parseResponseHead(raw: Buffer): ResponseHead {
  const { start, fields } = splitHead(raw, false);
  const sp1 = start.indexOf(' ');
  if (sp1 < 0) throw new H1Error('status_line');
  const minor = version(start.slice(0, sp1), 'status_line');
  const code = start.slice(sp1 + 1, sp1 + 4);
  if (!/^[1-9][0-9]{2}$/u.test(code) || (start.length > sp1 + 4 && start[sp1 + 4] !== ' ')) throw new H1Error('status_line', start.slice(0, 64));
  const reason = start.slice(sp1 + 5);
  if (!allIn(FIELD_VALUE, `${reason} `)) throw new H1Error('status_line', 'reason phrase');
  const { connection, keepAlive } = connectionOf(fields, minor);
  return { raw, fields, minor, connection, keepAlive, status: Number(code), reason };
}

/**
 * How a response's body is delimited (RFC 9112 §6.3): none after HEAD, a 1xx,
 * 204 or 304; chunked when its codings end in chunked; otherwise by
 * Content-Length; otherwise until the app closes the connection. Content-Length
 * beside Transfer-Encoding, or Content-Lengths that differ, throw H1Error
 * (`status_line`): the relay cannot pass on a body whose end it cannot tell.
 */
export function responseFraming(res: ResponseHead, requestMethod: string): BodyFraming {
  if (requestMethod === 'HEAD' || res.status < 200 || res.status === 204 || res.status === 304) return NO_BODY;
  const hasTe = res.fields.some((f) => f.name === 'transfer-encoding');
  const length = contentLength(res.fields, 'status_line');
  if (hasTe) {
    if (length !== undefined) throw new H1Error('status_line', 'Content-Length with Transfer-Encoding');
    return res.minor >= 1 && endsInChunked(listMembers(res.fields, 'transfer-encoding')) ? CHUNKED : UNTIL_CLOSE;
  }
  if (length !== undefined) return length === 0 ? NO_BODY : { kind: 'length', length };
  return UNTIL_CLOSE;
}
