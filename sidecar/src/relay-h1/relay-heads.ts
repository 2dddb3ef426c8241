// The heads the HTTP/1.1 relay passes on (--http1-data-plane relay): a head's
// bytes as read, less the lines that are hop-by-hop (RFC 9110 §7.6.1), its
// fields as the node:http headers object the call is recorded with, and whether
// an answer starts as HTTP/1.x at all.
import { addField, emptyHeaderBag, type HeaderBag } from '../protocol/header-bag.ts';
import { isHopByHop, namedByConnection } from '../protocol/hop-by-hop.ts';
import type { HeadField, RequestHead, ResponseHead } from '../h1/message-head.ts';

const CRLF = Buffer.from('\r\n');

/** A head's fields as node:http's headers object (repeated names become a list). */
export function bagOf(fields: readonly HeadField[]): HeaderBag {
  const bag = emptyHeaderBag();
  for (const { name, value } of fields) addField(bag, name, value);
  return bag;
}

const HTTP_VERSION_PREFIX = Buffer.from('HTTP/', 'latin1');
const CR_BYTE = 0x0d;
const LF_BYTE = 0x0a;

/**
 * Whether the bytes at `from`, the start of a response head, can begin an HTTP/1.x
 * response: a status line starts with HTTP-version (RFC 9112 §4), after any empty
 * lines the head reader skips. An HTTP/2 server's first frame (RFC 9113 §3.4) starts
 * with its length, 0x00 0x00 for a SETTINGS frame.
 */
export function startsAsHttp1(chunk: Buffer, from: number): boolean {
  let at = from;
  while (at < chunk.length && (chunk[at] === CR_BYTE || chunk[at] === LF_BYTE)) at++;
  const n = Math.min(chunk.length - at, HTTP_VERSION_PREFIX.length);
  return chunk.compare(HTTP_VERSION_PREFIX, 0, n, at, at + n) === 0;
}

export interface PassOptions {
  /** A line dropped besides the hop-by-hop ones. */
  readonly drop?: string;
  /** Connection and Upgrade stay: the hand-shake of an upgrade (RFC 9110 §7.8). */
  readonly keepUpgrade?: boolean;
}

/**
 * A head's bytes less its hop-by-hop lines (and `drop`), with `extra` lines added
 * at its end. Content-Length and Transfer-Encoding always stay: the body passes
 * on in the framing they describe.
 */
export function passHead(head: RequestHead | ResponseHead, extra: string, { drop, keepUpgrade = false }: PassOptions = {}): Buffer {
  const named = namedByConnection(head.connection);
  const parts: Buffer[] = [];
  let from = 0;
  for (const f of head.fields) {
    if (f.name === 'content-length' || f.name === 'transfer-encoding') continue;
    if (keepUpgrade && (f.name === 'connection' || f.name === 'upgrade')) continue;
    if (!isHopByHop(f.name, f.value, named) && f.name !== drop) continue;
    parts.push(head.raw.subarray(from, f.start));
    from = f.end;
  }
  if (from === 0 && extra === '') return head.raw;
  parts.push(head.raw.subarray(from, head.raw.length - 2), Buffer.from(extra, 'latin1'), CRLF);
  return Buffer.concat(parts);
}
