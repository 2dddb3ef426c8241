// The HTTP/1.1 grammar rpcscope's strict parser holds messages to, as byte
// tables (RFC 9110 §5.6.2, RFC 9112 §2–§7). Strict where a lenient reading is
// what request smuggling lives on: a byte that the app's parser might read
// otherwise than rpcscope's is refused, never guessed at.
//   https://www.rfc-editor.org/rfc/rfc9110#section-5.6.2 (tokens)
//   https://www.rfc-editor.org/rfc/rfc9110#section-5.5 (field values)
//   https://www.rfc-editor.org/rfc/rfc9112 (message syntax and framing)

export const CR = 0x0d;
export const LF = 0x0a;
export const SP = 0x20;
export const HTAB = 0x09;
export const COLON = 0x3a;
export const SEMICOLON = 0x3b;

function table(allowed: (b: number) => boolean): Uint8Array {
  const t = new Uint8Array(256);
  for (let b = 0; b < 256; b++) t[b] = allowed(b) ? 1 : 0;
  return t;
}

/** tchar (RFC 9110 §5.6.2): what a method, a field name and a transfer coding are made of. */
export const TCHAR = table((b) => (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || "!#$%&'*+-.^_`|~".includes(String.fromCharCode(b)));

/**
 * A field value's bytes (RFC 9110 §5.5): VCHAR, obs-text, SP and HTAB. CR, LF,
 * NUL and every other control byte are refused (§5.5: "MUST either reject").
 */
export const FIELD_VALUE = table((b) => b === SP || b === HTAB || (b >= 0x21 && b <= 0x7e) || b >= 0x80);

/**
 * A request-target's bytes (RFC 9112 §3.2, RFC 3986 §2): visible ASCII, no
 * whitespace, no control byte and no raw byte above 0x7e (percent-encoded
 * instead), as Node's own parser holds them.
 */
export const TARGET = table((b) => b >= 0x21 && b <= 0x7e);

/** A chunk extension's bytes (RFC 9112 §7.1.1), read up to its CRLF and passed on as they came. */
export const CHUNK_EXT = table((b) => b === SP || b === HTAB || (b >= 0x21 && b <= 0x7e) || b >= 0x80);

/** The value of a hex digit, or -1 (chunk-size, RFC 9112 §7.1). */
export function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  const l = b | 0x20;
  if (l >= 0x61 && l <= 0x66) return l - 0x61 + 10;
  return -1;
}

/** Whether every byte of `s` is in `t`, and there is at least one. */
export function allIn(t: Uint8Array, s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) if (t[s.charCodeAt(i)] !== 1) return false;
  return true;
}
