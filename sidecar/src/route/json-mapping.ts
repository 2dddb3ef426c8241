// The proto3 JSON mapping (protobuf.dev/programming-guides/json), between JSON
// values and protobufjs messages. protobufjs' own toObject/fromObject is not that
// mapping: it keeps 64-bit integers as Long, knows no well-known type's JSON form
// (Timestamp as RFC 3339, Duration as "1.5s", wrappers as their value, Struct as
// any JSON, FieldMask as "a.b,c"), and names fields as parsed. The table of the
// spec, and what this file does for each:
//
//   proto                 JSON                      here
//   message               object                    lowerCamelCase or json_name (or the proto name with --json-names proto); both read
//   enum                  name string               unknown numbers as numbers; NullValue is null
//   map<K,V>              object                    keys as the key's JSON text ("-1", "true"); a missing value is its default
//   repeated              array
//   bool                  true/false
//   string                string
//   bytes                 base64 string             standard with padding out; standard or URL-safe in
//   int32/uint32 (fixed)  number                    strings read too; out of range or not whole is an error
//   int64/uint64 (fixed)  string                    numbers read too; out of range or not whole is an error
//   float/double          number                    "NaN", "Infinity", "-Infinity"
//   Any                   {"@type": url, ...}       {"@type", "value"} for the well-known types; the type by its full name; {} when empty
//   Timestamp             "1972-01-01T10:00:20.021Z"  0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z
//   Duration              "1.000340012s"            ±315,576,000,000 s, nanos of the seconds' sign
//   Struct/Value/List     any JSON
//   wrappers              the wrapped value
//   FieldMask             "f.fooBar,h"
//   Empty                 {}
import protobuf from 'protobufjs';
import { ErrorCode, RpcscopeError } from '../core/errors.ts';

export type JsonNames = 'json' | 'proto';

/**
 * A value the mapping refuses: in a request the caller's mistake, answered
 * INVALID_ARGUMENT (HTTP 400); in an answer the upstream's, and the call fails
 * INTERNAL like any answer that cannot be decoded.
 */
export class JsonMappingError extends RpcscopeError {
  constructor(message: string) {
    super(ErrorCode.JSON_MAPPING, message);
    this.name = 'JsonMappingError';
  }
}

type Obj = Record<string, unknown>;

const INT64 = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const UNSIGNED = new Set(['uint32', 'fixed32', 'uint64', 'fixed64']);

// Each integer type's range (protobuf.dev/programming-guides/proto3#scalar). A
// value outside is an error, as in the spec's parsers: protobufjs' writers would
// keep only its low 32 or 64 bits, another number.
const INT32_RANGE = [-(2n ** 31n), 2n ** 31n - 1n] as const;
const UINT32_RANGE = [0n, 2n ** 32n - 1n] as const;
const INT64_RANGE = [-(2n ** 63n), 2n ** 63n - 1n] as const;
const UINT64_RANGE = [0n, 2n ** 64n - 1n] as const;
const INT_RANGES = new Map<string, readonly [bigint, bigint]>([
  ['int32', INT32_RANGE], ['sint32', INT32_RANGE], ['sfixed32', INT32_RANGE],
  ['uint32', UINT32_RANGE], ['fixed32', UINT32_RANGE],
  ['int64', INT64_RANGE], ['sint64', INT64_RANGE], ['sfixed64', INT64_RANGE],
  ['uint64', UINT64_RANGE], ['fixed64', UINT64_RANGE],
]);
const FLOAT = new Set(['float', 'double']);

const WRAPPERS = new Set(['DoubleValue', 'FloatValue', 'Int64Value', 'UInt64Value', 'Int32Value', 'UInt32Value', 'BoolValue', 'StringValue', 'BytesValue'].map((n) => `.google.protobuf.${n}`));

/** lowerCamelCase as protoc derives json_name: drop each `_` and upper-case the letter after it. */
export function lowerCamel(name: string): string {
  return name.replace(/_([a-z0-9])/gu, (_, c: string) => c.toUpperCase());
}

export function jsonNameOf(field: protobuf.Field): string {
  const explicit = field.options?.json_name;
  return typeof explicit === 'string' ? explicit : lowerCamel(field.name);
}

/** A field by its proto name, or the camelCase name protobufjs' bundled well-known types use. */
function fieldOf(type: protobuf.Type, name: string): protobuf.Field | undefined {
  return type.fields[name] ?? type.fields[lowerCamel(name)];
}

/** Each type's fields by every name a JSON parser must accept, computed once. */
const READ_NAMES = new WeakMap<protobuf.Type, Map<string, protobuf.Field>>();
export function fieldByJsonOrProtoName(type: protobuf.Type, name: string): protobuf.Field | undefined {
  let names = READ_NAMES.get(type);
  if (!names) {
    names = new Map();
    for (const f of type.fieldsArray) {
      names.set(f.name, f);
      names.set(jsonNameOf(f), f);
    }
    READ_NAMES.set(type, names);
  }
  return names.get(name);
}

interface LongLike {
  low: number;
  high: number;
}

function isLongLike(v: unknown): v is LongLike {
  return typeof v === 'object' && v !== null && typeof (v as LongLike).low === 'number' && typeof (v as LongLike).high === 'number';
}

/** 64-bit integers as protobufjs decodes them (a Long, or a number when safe) in decimal. */
function int64Text(v: unknown, unsigned: boolean): string {
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v;
  if (!isLongLike(v)) return '0';
  const bits = (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
  return (unsigned ? BigInt.asUintN(64, bits) : BigInt.asIntN(64, bits)).toString();
}

function floatJson(v: number): number | string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  return v;
}

function bytesBase64(v: unknown): string {
  return Buffer.from(v as Uint8Array).toString('base64');
}

function isDefault(v: unknown): boolean {
  if (v === null || v === undefined) return true;
  if (v === 0 || v === false || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  if (v instanceof Uint8Array) return v.length === 0;
  if (isLongLike(v)) return v.low === 0 && v.high === 0;
  return false;
}

function pad9(nanos: number): string {
  // RFC 3339 fractions of 0, 3, 6 or 9 digits, as the spec's generators write them.
  if (nanos === 0) return '';
  const s = String(nanos).padStart(9, '0');
  return `.${s.endsWith('000000') ? s.slice(0, 3) : s.endsWith('000') ? s.slice(0, 6) : s}`;
}

/** An integer as JSON or text gives it (a number, or decimal digits), exactly; undefined for anything else ("1.5", "1e3", "0x10"). */
function integerOf(v: unknown): bigint | undefined {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : undefined;
  const text = typeof v === 'string' ? v.trim() : '';
  return /^-?\d+$/u.test(text) ? BigInt(text) : undefined;
}

/**
 * A map key of a decoded message as JSON writes it. protobufjs' decoder keys a
 * 64-bit map by the key's 8-byte hash (util.longToHash), or by the default 0
 * for an entry without a key; the other kinds by the key's own text.
 */
function mapKeyToJson(keyType: string, key: string): string {
  if (!INT64.has(keyType) || key.length !== 8) return key;
  const unsigned = UNSIGNED.has(keyType);
  return int64Text(protobuf.util.longFromHash(key, unsigned), unsigned);
}

export class JsonMapping {
  constructor(
    private readonly root: protobuf.Root,
    private readonly names: JsonNames,
  ) {}

  private outName(field: protobuf.Field): string {
    return this.names === 'proto' ? field.name : jsonNameOf(field);
  }

  // ---- proto -> JSON ----

  /** A decoded message as its proto3 JSON value; a JsonMappingError, naming the field at `where`, for a value JSON cannot carry. */
  toJson(type: protobuf.Type, msg: Obj, where = ''): unknown {
    const wkt = this.wktToJson(type, msg, where || type.name);
    if (wkt !== NOT_WKT) return wkt;
    const out: Obj = {};
    for (const field of type.fieldsArray) {
      if (!Object.prototype.hasOwnProperty.call(msg, field.name)) continue;
      const v = msg[field.name];
      // Presence: a proto3 `optional` (a synthetic oneof) or a member of a oneof prints even at its default.
      if (field.map ? Object.keys(v as Obj).length === 0 : field.repeated ? (v as unknown[]).length === 0 : !field.partOf && !(field.resolvedType instanceof protobuf.Type) && isDefault(v)) continue;
      const name = this.outName(field);
      out[name] = this.fieldToJson(field, v, join(where, name));
    }
    return out;
  }

  /** One field's value as JSON; an absent field as its default (`{}`, `[]`, the scalar's zero). */
  fieldJson(field: protobuf.Field, v: unknown): unknown {
    if (v !== undefined) return this.fieldToJson(field, v, this.outName(field));
    if (field.map) return {};
    if (field.repeated) return [];
    if (field.resolvedType instanceof protobuf.Type) return this.toJson(field.resolvedType, {});
    if (field.resolvedType instanceof protobuf.Enum) return this.valueToJson(field, 0, this.outName(field));
    return scalarToJson(field.type, defaultScalar(field.type));
  }

  private fieldToJson(field: protobuf.Field, v: unknown, where: string): unknown {
    if (field instanceof protobuf.MapField) {
      const out: Obj = {};
      for (const [k, mv] of Object.entries(v as Obj)) {
        const key = mapKeyToJson(field.keyType, k);
        // An entry without its message value decodes to null; the value is the default, the empty message.
        out[key] = this.valueToJson(field, mv ?? {}, `${where}.${key}`);
      }
      return out;
    }
    if (field.repeated) return (v as unknown[]).map((x, i) => this.valueToJson(field, x, `${where}[${i}]`));
    return this.valueToJson(field, v, where);
  }

  private valueToJson(field: protobuf.Field, v: unknown, where: string): unknown {
    const rt = field.resolvedType;
    if (rt instanceof protobuf.Type) return this.toJson(rt, v as Obj, where);
    if (rt instanceof protobuf.Enum) {
      if (rt.fullName === '.google.protobuf.NullValue') return null;
      return rt.valuesById[v as number] ?? v;
    }
    return scalarToJson(field.type, v);
  }

  private wktToJson(type: protobuf.Type, msg: Obj, at: string): unknown {
    const name = type.fullName;
    if (WRAPPERS.has(name)) return scalarToJson(type.fields.value!.type, msg.value ?? defaultScalar(type.fields.value!.type));
    switch (name) {
      case '.google.protobuf.Timestamp': {
        const seconds = int64Text(msg.seconds ?? 0, false);
        const nanos = (msg.nanos as number | undefined) ?? 0;
        if (!timestampInRange(BigInt(seconds), nanos)) throw new JsonMappingError(`${at}: a Timestamp of ${seconds} s ${nanos} ns is outside ${TIMESTAMP_RANGE}`);
        const iso = new Date(Number(seconds) * 1000).toISOString();
        return `${iso.slice(0, 19)}${pad9(nanos)}Z`;
      }
      case '.google.protobuf.Duration': {
        const seconds = int64Text(msg.seconds ?? 0, false);
        const nanos = (msg.nanos as number | undefined) ?? 0;
        if (!durationInRange(BigInt(seconds), nanos)) throw new JsonMappingError(`${at}: a Duration of ${seconds} s ${nanos} ns is outside ${DURATION_RANGE}`);
        const neg = seconds.startsWith('-') || nanos < 0;
        const whole = seconds.replace('-', '');
        return `${neg ? '-' : ''}${whole}${pad9(Math.abs(nanos))}s`;
      }
      case '.google.protobuf.FieldMask':
        return ((msg.paths as string[] | undefined) ?? []).map((p) => p.split('.').map(lowerCamel).join('.')).join(',');
      case '.google.protobuf.Struct':
        return this.structToJson(type, msg);
      case '.google.protobuf.ListValue':
        return this.listToJson(type, msg);
      case '.google.protobuf.Value':
        return this.valueMsgToJson(type, msg);
      case '.google.protobuf.Empty':
        return {};
      case '.google.protobuf.Any':
        return this.anyToJson(msg, at);
    }
    return NOT_WKT;
  }

  private structToJson(type: protobuf.Type, msg: Obj): Obj {
    const valueType = fieldOf(type, 'fields')!.resolvedType as protobuf.Type;
    const out: Obj = {};
    // As for any map: an entry without its value is the default Value (JSON null).
    for (const [k, v] of Object.entries((msg.fields as Obj | undefined) ?? {})) out[k] = this.valueMsgToJson(valueType, (v ?? {}) as Obj);
    return out;
  }

  private listToJson(type: protobuf.Type, msg: Obj): unknown[] {
    const valueType = fieldOf(type, 'values')!.resolvedType as protobuf.Type;
    return ((msg.values as Obj[] | undefined) ?? []).map((v) => this.valueMsgToJson(valueType, v));
  }

  private valueMsgToJson(type: protobuf.Type, msg: Obj): unknown {
    const has = (n: string): boolean => {
      const f = fieldOf(type, n);
      return f !== undefined && Object.prototype.hasOwnProperty.call(msg, f.name);
    };
    const get = (n: string): unknown => msg[fieldOf(type, n)!.name];
    if (has('number_value')) return floatJson(get('number_value') as number);
    if (has('string_value')) return get('string_value');
    if (has('bool_value')) return get('bool_value');
    if (has('struct_value')) return this.structToJson(fieldOf(type, 'struct_value')!.resolvedType as protobuf.Type, get('struct_value') as Obj);
    if (has('list_value')) return this.listToJson(fieldOf(type, 'list_value')!.resolvedType as protobuf.Type, get('list_value') as Obj);
    return null;
  }

  private anyToJson(msg: Obj, at: string): unknown {
    const url = (msg.type_url ?? msg.typeUrl) as string | undefined;
    if (!url) return {};
    const inner = this.lookupAny(url, at);
    let decoded: Obj;
    try {
      decoded = inner.decode((msg.value as Uint8Array | undefined) ?? new Uint8Array()) as unknown as Obj;
    } catch (err) {
      throw new JsonMappingError(`${at}: the Any's value is not a ${inner.fullName.slice(1)}: ${(err as Error).message}`);
    }
    const json = this.toJson(inner, decoded, at);
    if (this.isWkt(inner)) return { '@type': url, value: json };
    return { '@type': url, ...(json as Obj) };
  }

  /** The message type an Any's type URL names by its full name (the text after the last "/"). */
  private lookupAny(url: string, at: string): protobuf.Type {
    const name = url.slice(url.lastIndexOf('/') + 1);
    // Compared by full name: protobufjs' lookup also finds a type by a tail of its
    // name ("Foo" for a.b.Foo), and answers "" and "." with the root namespace.
    const found = this.root.lookup(name);
    if (!(found instanceof protobuf.Type) || found.fullName !== `.${name}`) throw new JsonMappingError(`${at}: the Any's type ${JSON.stringify(url)} names no message type of the .proto files`);
    try {
      found.resolveAll();
    } catch (err) {
      throw new JsonMappingError(`${at}: the Any's type ${JSON.stringify(url)}: ${(err as Error).message}`);
    }
    return found;
  }

  private isWkt(type: protobuf.Type): boolean {
    return type.fullName.startsWith('.google.protobuf.') && (WRAPPERS.has(type.fullName) || WKT_NAMES.has(type.fullName));
  }

  // ---- JSON -> proto ----

  /** A JSON value as the object protobufjs' fromObject reads; a JsonMappingError when it does not fit the type. */
  fromJson(type: protobuf.Type, json: unknown, where = ''): Obj {
    const wkt = this.wktFromJson(type, json, where);
    if (wkt !== NOT_WKT) return wkt as Obj;
    if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new JsonMappingError(`${where || type.name}: expected a JSON object for ${type.name}`);
    const out: Obj = {};
    for (const [key, v] of Object.entries(json as Obj)) {
      const field = fieldByJsonOrProtoName(type, key);
      if (!field) throw new JsonMappingError(`${join(where, key)}: no such field in ${type.name}`);
      if (v === null && !(field.resolvedType?.fullName === '.google.protobuf.Value' || field.resolvedType?.fullName === '.google.protobuf.NullValue')) continue;
      out[field.name] = this.fieldFromJson(field, v, join(where, key));
    }
    return out;
  }

  fieldFromJson(field: protobuf.Field, v: unknown, where: string): unknown {
    if (field instanceof protobuf.MapField) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new JsonMappingError(`${where}: expected a JSON object for a map`);
      const out: Obj = {};
      for (const [k, mv] of Object.entries(v as Obj)) out[mapKeyFromJson(field.keyType, k, where)] = this.valueFromJson(field, mv, `${where}.${k}`);
      return out;
    }
    if (field.repeated) {
      if (!Array.isArray(v)) throw new JsonMappingError(`${where}: expected a JSON array`);
      return v.map((x, i) => this.valueFromJson(field, x, `${where}[${i}]`));
    }
    return this.valueFromJson(field, v, where);
  }

  valueFromJson(field: protobuf.Field, v: unknown, where: string): unknown {
    const rt = field.resolvedType;
    if (rt instanceof protobuf.Type) return this.fromJson(rt, v, where);
    if (rt instanceof protobuf.Enum) {
      if (rt.fullName === '.google.protobuf.NullValue') return 0;
      if (typeof v === 'string' && rt.values[v] !== undefined) return rt.values[v];
      // An unknown number is kept (enums are open), if it fits the int32 an enum is on the wire.
      if (typeof v === 'number' && Number.isInteger(v) && v >= INT32_RANGE[0] && v <= INT32_RANGE[1]) return v;
      throw new JsonMappingError(`${where}: ${JSON.stringify(v)} is not a value of ${rt.name}`);
    }
    return scalarFromJson(field.type, v, where);
  }

  private wktFromJson(type: protobuf.Type, json: unknown, where: string): unknown {
    const name = type.fullName;
    const at = where || type.name;
    if (WRAPPERS.has(name)) return { value: scalarFromJson(type.fields.value!.type, json, at) };
    switch (name) {
      case '.google.protobuf.Timestamp':
        return parseTimestamp(json, at);
      case '.google.protobuf.Duration':
        return parseDuration(json, at);
      case '.google.protobuf.FieldMask':
        if (typeof json !== 'string') throw new JsonMappingError(`${at}: a FieldMask is a string`);
        return { paths: json === '' ? [] : json.split(',').map((p) => p.split('.').map((s) => s.replace(/[A-Z]/gu, (c) => `_${c.toLowerCase()}`)).join('.')) };
      case '.google.protobuf.Struct':
        return this.structFromJson(type, json, at);
      case '.google.protobuf.ListValue':
        return this.listFromJson(type, json, at);
      case '.google.protobuf.Value':
        return this.valueMsgFromJson(type, json, at);
      case '.google.protobuf.Empty':
        return {};
      case '.google.protobuf.Any':
        return this.anyFromJson(json, at);
    }
    return NOT_WKT;
  }

  private structFromJson(type: protobuf.Type, json: unknown, at: string): Obj {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new JsonMappingError(`${at}: a Struct is a JSON object`);
    const f = fieldOf(type, 'fields')!;
    const fields: Obj = {};
    for (const [k, v] of Object.entries(json as Obj)) fields[k] = this.valueMsgFromJson(f.resolvedType as protobuf.Type, v, `${at}.${k}`);
    return { [f.name]: fields };
  }

  private listFromJson(type: protobuf.Type, json: unknown, at: string): Obj {
    if (!Array.isArray(json)) throw new JsonMappingError(`${at}: a ListValue is a JSON array`);
    const f = fieldOf(type, 'values')!;
    return { [f.name]: json.map((v, i) => this.valueMsgFromJson(f.resolvedType as protobuf.Type, v, `${at}[${i}]`)) };
  }

  private valueMsgFromJson(type: protobuf.Type, json: unknown, at: string): Obj {
    const name = (n: string): string => fieldOf(type, n)!.name;
    if (json === null) return { [name('null_value')]: 0 };
    if (typeof json === 'number') return { [name('number_value')]: json };
    if (typeof json === 'string') return { [name('string_value')]: json };
    if (typeof json === 'boolean') return { [name('bool_value')]: json };
    if (Array.isArray(json)) return { [name('list_value')]: this.listFromJson(fieldOf(type, 'list_value')!.resolvedType as protobuf.Type, json, at) };
    return { [name('struct_value')]: this.structFromJson(fieldOf(type, 'struct_value')!.resolvedType as protobuf.Type, json, at) };
  }

  private anyFromJson(json: unknown, at: string): Obj {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new JsonMappingError(`${at}: an Any is a JSON object`);
    // The empty Any, as toJson writes it (and protobuf-java and Go read it).
    if (Object.keys(json).length === 0) return {};
    const { '@type': url, ...rest } = json as Obj;
    if (typeof url !== 'string') throw new JsonMappingError(`${at}: an Any needs "@type"`);
    const inner = this.lookupAny(url, at);
    const plain = this.isWkt(inner) ? this.fromJson(inner, rest.value, at) : this.fromJson(inner, rest, at);
    return { type_url: url, value: inner.encode(inner.fromObject(plain)).finish() };
  }
}

const NOT_WKT = Symbol('not a well-known type');
const WKT_NAMES = new Set(['Timestamp', 'Duration', 'FieldMask', 'Struct', 'ListValue', 'Value', 'Empty', 'Any'].map((n) => `.google.protobuf.${n}`));

function join(where: string, key: string): string {
  return where ? `${where}.${key}` : key;
}

function defaultScalar(type: string): unknown {
  if (type === 'bool') return false;
  if (type === 'string') return '';
  if (type === 'bytes') return new Uint8Array();
  return 0;
}

export function scalarToJson(type: string, v: unknown): unknown {
  if (INT64.has(type)) return int64Text(v, UNSIGNED.has(type));
  if (FLOAT.has(type)) return floatJson(v as number);
  if (type === 'bytes') return bytesBase64(v);
  return v;
}

/**
 * A map key from JSON, where every key is a string, as the key protobufjs'
 * fromObject and encode take: checked and read as its key type's value.
 */
function mapKeyFromJson(keyType: string, key: string, where: string): string {
  const v = scalarFromJson(keyType, key, `${where} (a key)`);
  // protobufjs' encoder writes a bool key as the truth of the object key, always
  // a string: "" is the key that writes false (protobuf.js issue 2087).
  if (keyType === 'bool') return v ? 'true' : '';
  return String(v);
}

/** A scalar from JSON (or from a path or query text, where every value is a string). */
export function scalarFromJson(type: string, v: unknown, where: string): unknown {
  const bad = (what: string): JsonMappingError => new JsonMappingError(`${where}: ${JSON.stringify(v)} is not ${what}`);
  const range = INT_RANGES.get(type);
  if (range) {
    const n = integerOf(v);
    if (n === undefined) throw bad(`an integer (${type})`);
    if (range[0] === 0n && n < 0n) throw bad(`an unsigned integer (${type})`);
    if (n < range[0] || n > range[1]) throw bad(`within the range of ${type}`);
    // 64-bit values stay decimal text: a number would lose digits past 2^53.
    return INT64.has(type) ? n.toString() : Number(n);
  }
  if (FLOAT.has(type)) {
    if (typeof v === 'number') return v;
    if (v === 'NaN') return NaN;
    if (v === 'Infinity') return Infinity;
    if (v === '-Infinity') return -Infinity;
    if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
    throw bad(`a number (${type})`);
  }
  if (type === 'bool') {
    if (typeof v === 'boolean') return v;
    if (v === 'true') return true;
    if (v === 'false') return false;
    throw bad('true or false');
  }
  if (type === 'string') {
    if (typeof v !== 'string') throw bad('a string');
    return v;
  }
  if (type === 'bytes') {
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/u.test(v)) throw bad('base64');
    return Buffer.from(v.replace(/-/gu, '+').replace(/_/gu, '/'), 'base64');
  }
  throw bad(type);
}

// The ranges timestamp.proto and duration.proto give; a value outside has no JSON form.
//   Timestamp  seconds -62,135,596,800 (0001-01-01T00:00:00Z) to 253,402,300,799 (9999-12-31T23:59:59Z), nanos 0 to 999,999,999
//   Duration   seconds -315,576,000,000 to 315,576,000,000 (about 10,000 years), nanos -999,999,999 to 999,999,999 of the seconds' sign
const TIMESTAMP_SECONDS = [-62135596800n, 253402300799n] as const;
const DURATION_SECONDS = 315576000000n;
const MAX_NANOS = 999999999;
const TIMESTAMP_RANGE = '0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z';
const DURATION_RANGE = '±315576000000.999999999s';

function timestampInRange(seconds: bigint, nanos: number): boolean {
  return seconds >= TIMESTAMP_SECONDS[0] && seconds <= TIMESTAMP_SECONDS[1] && nanos >= 0 && nanos <= MAX_NANOS;
}

function durationInRange(seconds: bigint, nanos: number): boolean {
  if (seconds < -DURATION_SECONDS || seconds > DURATION_SECONDS || Math.abs(nanos) > MAX_NANOS) return false;
  return !(seconds > 0n && nanos < 0) && !(seconds < 0n && nanos > 0);
}

function parseTimestamp(json: unknown, at: string): Obj {
  const m = typeof json === 'string' ? /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/u.exec(json) : null;
  if (!m) throw new JsonMappingError(`${at}: ${JSON.stringify(json)} is not an RFC 3339 timestamp`);
  const ms = Date.parse(`${m[1]}${m[3]}`);
  // Date.parse rolls a day or an hour past the end over ("02-30" to March 2nd, "24:00" to the next day): the date must read back as written.
  const wall = Date.parse(`${m[1]}Z`);
  if (Number.isNaN(ms) || Number.isNaN(wall) || new Date(wall).toISOString().slice(0, 19) !== m[1]) throw new JsonMappingError(`${at}: ${JSON.stringify(json)} is not a valid date`);
  const seconds = BigInt(Math.floor(ms / 1000));
  const nanos = m[2] ? Number(m[2].padEnd(9, '0')) : 0;
  if (!timestampInRange(seconds, nanos)) throw new JsonMappingError(`${at}: ${JSON.stringify(json)} is outside ${TIMESTAMP_RANGE}`);
  return { seconds: seconds.toString(), nanos };
}

function parseDuration(json: unknown, at: string): Obj {
  const m = typeof json === 'string' ? /^(-)?(\d+)(?:\.(\d{1,9}))?s$/u.exec(json) : null;
  if (!m) throw new JsonMappingError(`${at}: ${JSON.stringify(json)} is not a duration like "1.5s"`);
  const seconds = BigInt(`${m[1] ?? ''}${m[2]}`);
  const nanos = (m[1] ? -1 : 1) * (m[3] ? Number(m[3].padEnd(9, '0')) : 0);
  if (!durationInRange(seconds, nanos)) throw new JsonMappingError(`${at}: ${JSON.stringify(json)} is outside ${DURATION_RANGE}`);
  return { seconds: seconds.toString(), nanos };
}
