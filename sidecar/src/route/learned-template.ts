// A route template guessed from a path no configured route matched: segments
// that look like identifiers become `{id}`, so that `/v1/orders/8812` and
// `/v1/orders/8813` are one series. The test is deliberately eager — a word
// taken for an id costs a less precise label, an id taken for a word costs a
// series per id (bounded only by the method guard).

/** A segment kept as it is: a word-like token that is not too long. */
const WORD = /^[A-Za-z_][A-Za-z0-9_.~-]*$/;
const MAX_WORD = 40;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Object ids, hashes, trace ids. */
const LONG_HEX = /^[0-9a-f]{16,}$/i;
/** `user12345`, `INV-000123`: a number with a prefix is still a number. */
const DIGIT_RUN = /\d{4}/;
const DIGIT = /\d/;
/** Random tokens (base62, base64url) of this length or more that mix letters and digits. */
const MIN_TOKEN = 16;
/** A label longer than this is not a route; the call is folded into `_OTHER`. */
const MAX_TEMPLATE = 256;

export const ID_PARAM = '{id}';

/** Whether a path segment is an identifier rather than part of the route. */
export function isIdSegment(seg: string): boolean {
  if (seg === '') return false;
  if (seg.length > MAX_WORD || !WORD.test(seg)) return true;
  if (UUID.test(seg) || LONG_HEX.test(seg) || DIGIT_RUN.test(seg)) return true;
  return seg.length >= MIN_TOKEN && DIGIT.test(seg);
}

/** The learned template of a path (starting with `/`), or undefined when it cannot be one. */
export function learnTemplate(path: string): string | undefined {
  if (path.charCodeAt(0) !== 47 /* "/" */) return undefined;
  const segs = path.split('/');
  for (let i = 1; i < segs.length; i++) {
    if (isIdSegment(segs[i]!)) segs[i] = ID_PARAM;
  }
  const template = segs.join('/');
  return template.length > MAX_TEMPLATE ? undefined : template;
}
