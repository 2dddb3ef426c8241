// The HPACK static table, RFC 7541 Appendix A: index 1 is the first entry.
// Index 0 is unused by the format; it holds an empty pair so that lookups need no offset.
// prettier-ignore
export const STATIC_TABLE: readonly (readonly [name: string, value: string])[] = [
  ['', ''],
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''], ['access-control-allow-origin', ''],
  ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''], ['content-disposition', ''],
  ['content-encoding', ''], ['content-language', ''], ['content-length', ''], ['content-location', ''], ['content-range', ''],
  ['content-type', ''], ['cookie', ''], ['date', ''], ['etag', ''], ['expect', ''],
  ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''],
  ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''],
  ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''], ['set-cookie', ''],
  ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''],
  ['www-authenticate', ''],
];

/** The last static index; dynamic entries follow it (§2.3.3). */
export const STATIC_LENGTH = STATIC_TABLE.length - 1;

/** Static index of a name, for encoding a literal with an indexed name. */
export const STATIC_NAME_INDEX: ReadonlyMap<string, number> = new Map(
  STATIC_TABLE.map(([name], i) => [name, i] as const).filter(([name], i) => i > 0 && name !== '').reverse(),
);

/** Static index of a whole field, by name then value, for the few fields the table holds with a value. */
export const STATIC_FIELD_INDEX: ReadonlyMap<string, ReadonlyMap<string, number>> = (() => {
  const byName = new Map<string, Map<string, number>>();
  STATIC_TABLE.forEach(([name, value], i) => {
    if (value === '') return;
    let values = byName.get(name);
    if (!values) byName.set(name, (values = new Map()));
    values.set(value, i);
  });
  return byName;
})();
