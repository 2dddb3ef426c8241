// How large an HTTP/2 request's header list may be. RFC 9113 §6.5.2 sizes a
// header list as the sum over its fields of name length + value length + 32
// (the 32 charges each field for its bookkeeping, so ten thousand empty fields
// are not free). Node advertises SETTINGS_MAX_HEADER_LIST_SIZE 65535 but does
// not refuse a larger list itself; a client past it is answered 431, as an
// HTTP/1.1 client past its 16 KiB is.
import type http2 from 'node:http2';

/** The size Node advertises: a client that honours it is never refused. */
export const MAX_HEADER_LIST_SIZE = 65535;
/**
 * Node resets a stream past this many fields before anyone sees it (ENHANCE_YOUR_CALM,
 * uncounted). Every list of more fields than 65535 / 32 is over the size anyway, so
 * the cap is set where no header block nghttp2 takes can reach it — HEADERS and 8
 * CONTINUATIONs (more is a continuation_flood) of 16384 octets, Node's frame size, at
 * one octet per field — and the size decides, with a 431 that is counted. Node still
 * resets, uncounted, a list whose decoded fields outgrow its session memory (10 MB).
 */
export const MAX_HEADER_LIST_PAIRS = 9 * 16_384;
const FIELD_OVERHEAD = 32;

/** The RFC 9113 size of a request's header list, from Node's raw fields (name, value, name, value…) or, without them, its headers. */
export function headerListSize(headers: http2.IncomingHttpHeaders, rawHeaders: string[] | undefined): number {
  let size = 0;
  if (rawHeaders) {
    for (let i = 0; i < rawHeaders.length; i++) size += rawHeaders[i]!.length;
    return size + (rawHeaders.length / 2) * FIELD_OVERHEAD;
  }
  for (const name in headers) {
    const value = headers[name];
    for (const v of Array.isArray(value) ? value : [value ?? '']) size += name.length + String(v).length + FIELD_OVERHEAD;
  }
  return size;
}
