// Headers that belong to one connection, not to the message (RFC 9110 §7.6.1):
// a proxy removes them, and any header the Connection field names. HTTP/2 forbids
// them outright (RFC 9113 §8.2.2), except `te: trailers`, which gRPC requires and
// which therefore survives in both directions.

const HOP_BY_HOP = new Set(['connection', 'proxy-connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'http2-settings']);

function connectionTokens(value: string | string[] | undefined): Set<string> | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(',') : value;
  const names = text.split(',').map((t) => t.trim().toLowerCase()).filter((t) => t !== '' && t !== 'close' && t !== 'keep-alive');
  return names.length ? new Set(names) : undefined;
}

/** `te` keeps only its `trailers` token, the one HTTP/2 allows and gRPC needs. */
function keepsTrailers(te: string): boolean {
  return te.split(',').some((t) => t.trim().toLowerCase().split(';')[0] === 'trailers');
}

/**
 * HTTP/1.1 raw headers ([name, value, name, value, ...]) minus hop-by-hop ones.
 * `keepUpgrade` leaves Connection/Upgrade in place for a WebSocket hand-shake. The
 * Host header is kept: the caller's authority goes on to the upstream unchanged.
 */
export function filterRawHeaders(raw: readonly string[], keepUpgrade = false): string[] {
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection') {
      const t = connectionTokens(raw[i + 1]);
      if (t) named = new Set([...(named ?? []), ...t]);
    }
  }
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (keepUpgrade && (lower === 'connection' || lower === 'upgrade')) {
      out.push(name, value);
      continue;
    }
    if (lower === 'te' && keepsTrailers(value)) {
      out.push(name, 'trailers');
      continue;
    }
    if (HOP_BY_HOP.has(lower) || named?.has(lower)) continue;
    out.push(name, value);
  }
  return out;
}

/**
 * HTTP/2 header object minus pseudo-headers and anything connection-specific that a
 * peer may still have sent. Node's http2 layer already rejects most of them.
 */
export function filterH2Headers(headers: Record<string, string | string[] | undefined>, out: Record<string, string | string[]>): void {
  for (const name in headers) {
    if (name.charCodeAt(0) === 0x3a /* : */) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (name === 'te') {
      if (keepsTrailers(String(value))) out.te = 'trailers';
      continue;
    }
    if (HOP_BY_HOP.has(name)) continue;
    out[name] = value;
  }
}

// Fields Node's http2 layer takes once only: it refuses to send a second one
// (ERR_HTTP2_HEADER_SINGLE_VALUE) and keeps the first of those it receives
// (lib/internal/http2/util.js, kSingleValueHeaders). A peer that repeats one gets
// its first value forwarded, as Node itself would read it.
const SINGLE_VALUE = new Set([
  'access-control-allow-credentials', 'access-control-max-age', 'access-control-request-method', 'age', 'authorization',
  'content-encoding', 'content-language', 'content-length', 'content-location', 'content-md5', 'content-range', 'content-type',
  'date', 'dnt', 'etag', 'expires', 'from', 'host', 'if-match', 'if-modified-since', 'if-none-match', 'if-range',
  'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'range', 'referer',
  'retry-after', 'tk', 'upgrade-insecure-requests', 'user-agent', 'x-content-type-options',
]);

/**
 * Raw fields ([name, value, ...], as Node's `rawHeaders`) as a header object to
 * send: names lower-case (RFC 9113 §8.2.1), pseudo-headers and connection-specific
 * fields gone, and a repeated field kept as repeated fields (an array), never
 * joined with ", " — gRPC metadata may repeat a key, and a binary value joined so
 * is no longer base64 to a C-core peer. `firstOfSingle` (raw fields from HTTP/2)
 * keeps the first of a repeated single-value field, as Node reads it; from
 * HTTP/1.1 the repetition stays, and Node refuses to send it over HTTP/2.
 */
export function fieldsFromRaw(raw: readonly string[], out: Record<string, string | string[]>, firstOfSingle = false): void {
  const kept = filterRawHeaders(raw);
  for (let i = 0; i < kept.length; i += 2) {
    const name = kept[i]!.toLowerCase();
    if (name.charCodeAt(0) === 0x3a /* : */) continue;
    const value = kept[i + 1]!;
    // A field's name is the client's: `constructor` or `__proto__` must read as the
    // field, never as Object.prototype's property (or replace the object's prototype).
    const seen = Object.hasOwn(out, name) ? out[name] : undefined;
    if (seen === undefined) setOwn(out, name, value);
    else if (firstOfSingle && SINGLE_VALUE.has(name)) continue;
    else if (Array.isArray(seen)) seen.push(value);
    else setOwn(out, name, [seen, value]);
  }
}

/** `out[name] = value` as an own property whatever the name (`__proto__` would set the prototype). */
export function setOwn<T>(out: Record<string, T>, name: string, value: T): void {
  if (name === '__proto__') Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
  else out[name] = value;
}

/** The fields a message's Connection options name (RFC 9110 §7.6.1), which a proxy drops too. */
export function namedByConnection(options: readonly string[]): Set<string> | undefined {
  return options.length ? connectionTokens([...options]) : undefined;
}

/** Whether a proxy drops the field `lower` (its name lowercased): `te` stays when it asks for trailers. */
export function isHopByHop(lower: string, value: string, named: Set<string> | undefined): boolean {
  if (lower === 'te') return !keepsTrailers(value);
  return HOP_BY_HOP.has(lower) || named?.has(lower) === true;
}
