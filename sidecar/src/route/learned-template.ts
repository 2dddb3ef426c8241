// A route template guessed from a path no configured route matched: segments
// that look like identifiers become `{id}`, so that `/v1/orders/8812` and
// `/v1/orders/8813` are one series. The test is deliberately eager — a word
// taken for an id costs a less precise label, an id taken for a word costs a
// series per id (bounded only by the method guard).

/** Longer segments are never words. */
const MAX_WORD = 40;
/** Random tokens (base62, base64url) of this length or more that mix letters and digits. */
const MIN_TOKEN = 16;
/** `user12345`, `INV-000123`: a number with a prefix is still a number. */
const DIGIT_RUN = 4;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A label longer than this is not a route; the call is folded into `_OTHER`. */
const MAX_TEMPLATE = 256;

export const ID_PARAM = '{id}';

/**
 * Whether a path segment is an identifier rather than part of the route. Kept
 * as words: a letter or `_`, then letters, digits, `_ . ~ -`. Ids: anything
 * else (numbers, emails, %-escapes, base64), and among words UUIDs, hex of 16+
 * characters, runs of 4+ digits, and tokens of 16+ characters with a digit.
 */
export function isIdSegment(seg: string): boolean {
  return isIdAt(seg, 0, seg.length);
}

/**
 * The test of `isIdSegment` on `s[start, end)`: one pass over the characters,
 * no substring, since it runs for every REST call no configured route matched.
 */
function isIdAt(s: string, start: number, end: number): boolean {
  const n = end - start;
  if (n === 0) return false;
  if (n > MAX_WORD) return true;
  const first = s.charCodeAt(start);
  if (!isLetter(first) && first !== 95 /* _ */) return true;
  let digits = 0;
  let run = 0;
  let hex = true;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      digits++;
      if (++run >= DIGIT_RUN) return true;
      continue;
    }
    run = 0;
    if (isLetter(c)) {
      if ((c | 0x20) > 102 /* f */) hex = false;
    } else if (c === 95 || c === 46 || c === 126 || c === 45 /* _ . ~ - */) {
      hex = false;
    } else {
      return true;
    }
  }
  if (hex && n >= 16) return true;
  if (digits > 0 && n >= MIN_TOKEN) return true;
  return n === 36 && UUID.test(s.slice(start, end));
}

function isLetter(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** The learned template of a path (starting with `/`), or undefined when it cannot be one. */
export function learnTemplate(path: string): string | undefined {
  if (path.charCodeAt(0) !== 47 /* / */) return undefined;
  let template = '';
  let copied = 0;
  let start = 1;
  while (start <= path.length) {
    let end = path.indexOf('/', start);
    if (end === -1) end = path.length;
    if (isIdAt(path, start, end)) {
      template += path.slice(copied, start) + ID_PARAM;
      copied = end;
    }
    start = end + 1;
  }
  if (copied === 0) template = path;
  else template += path.slice(copied);
  return template.length > MAX_TEMPLATE ? undefined : template;
}
