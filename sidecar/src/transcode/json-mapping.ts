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
//   map<K,V>              object                    keys as strings
//   repeated              array
//   bool                  true/false
//   string                string
//   bytes                 base64 string             standard with padding out; standard or URL-safe in
//   int32/uint32 (fixed)  number                    strings read too
//   int64/uint64 (fixed)  string                    numbers read too
//   float/double          number                    "NaN", "Infinity", "-Infinity"
//   Any                   {"@type": url, ...}       {"@type", "value"} for the well-known types
//   Timestamp             "1972-01-01T10:00:20.021Z"
//   Duration              "1.000340012s"
//   Struct/Value/List     any JSON
//   wrappers              the wrapped value
//   FieldMask             "f.fooBar,h"
//   Empty                 {}
import protobuf from 'protobufjs';

export type JsonNames = 'json' | 'proto';

/** A request the caller got wrong: answered INVALID_ARGUMENT (HTTP 400). */
export class JsonMappingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonMappingError';
  }
}

type Obj = Record<string, unknown>;

const INT64 = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const INT32 = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32']);
const UNSIGNED = new Set(['uint32', 'fixed32', 'uint64', 'fixed64']);
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

function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return Number(v);
  return Number(int64Text(v, false));
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

  /** A decoded message as its proto3 JSON value. */
  toJson(type: protobuf.Type, msg: Obj): unknown {
    const wkt = this.wktToJson(type, msg);
    if (wkt !== NOT_WKT) return wkt;
    const out: Obj = {};
    for (const field of type.fieldsArray) {
      if (!Object.prototype.hasOwnProperty.call(msg, field.name)) continue;
      const v = msg[field.name];
      // Presence: a proto3 `optional` (a synthetic oneof) or a member of a oneof prints even at its default.
      if (field.map ? Object.keys(v as Obj).length === 0 : field.repeated ? (v as unknown[]).length === 0 : !field.partOf && !(field.resolvedType instanceof protobuf.Type) && isDefault(v)) continue;
      out[this.outName(field)] = this.fieldToJson(field, v);
    }
    return out;
  }

  /** One field's value as JSON; an absent field as its default (`{}`, `[]`, the scalar's zero). */
  fieldJson(field: protobuf.Field, v: unknown): unknown {
    if (v !== undefined) return this.fieldToJson(field, v);
    if (field.map) return {};
    if (field.repeated) return [];
    if (field.resolvedType instanceof protobuf.Type) return this.toJson(field.resolvedType, {});
    if (field.resolvedType instanceof protobuf.Enum) return this.valueToJson(field, 0);
    return scalarToJson(field.type, defaultScalar(field.type));
  }

  private fieldToJson(field: protobuf.Field, v: unknown): unknown {
    if (field.map) {
      const out: Obj = {};
      for (const [k, mv] of Object.entries(v as Obj)) out[k] = this.valueToJson(field, mv);
      return out;
    }
    if (field.repeated) return (v as unknown[]).map((x) => this.valueToJson(field, x));
    return this.valueToJson(field, v);
  }

  private valueToJson(field: protobuf.Field, v: unknown): unknown {
    const rt = field.resolvedType;
    if (rt instanceof protobuf.Type) return this.toJson(rt, v as Obj);
    if (rt instanceof protobuf.Enum) {
      if (rt.fullName === '.google.protobuf.NullValue') return null;
      return rt.valuesById[v as number] ?? v;
    }
    return scalarToJson(field.type, v);
  }

  private wktToJson(type: protobuf.Type, msg: Obj): unknown {
    const name = type.fullName;
    if (WRAPPERS.has(name)) return scalarToJson(type.fields.value!.type, msg.value ?? defaultScalar(type.fields.value!.type));
    switch (name) {
      case '.google.protobuf.Timestamp': {
        const seconds = toNumber(msg.seconds ?? 0);
        const nanos = (msg.nanos as number | undefined) ?? 0;
        const iso = new Date(seconds * 1000).toISOString();
        return `${iso.slice(0, 19)}${pad9(nanos)}Z`;
      }
      case '.google.protobuf.Duration': {
        const seconds = int64Text(msg.seconds ?? 0, false);
        const nanos = (msg.nanos as number | undefined) ?? 0;
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
        return this.anyToJson(msg);
    }
    return NOT_WKT;
  }

  private structToJson(type: protobuf.Type, msg: Obj): Obj {
    const valueType = fieldOf(type, 'fields')!.resolvedType as protobuf.Type;
    const out: Obj = {};
    for (const [k, v] of Object.entries((msg.fields as Obj | undefined) ?? {})) out[k] = this.valueMsgToJson(valueType, v as Obj);
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

  private anyToJson(msg: Obj): unknown {
    const url = (msg.type_url ?? msg.typeUrl) as string | undefined;
    if (!url) return {};
    const inner = this.lookupAny(url);
    const decoded = inner.decode((msg.value as Uint8Array | undefined) ?? new Uint8Array()) as unknown as Obj;
    const json = this.toJson(inner, decoded);
    if (this.isWkt(inner)) return { '@type': url, value: json };
    return { '@type': url, ...(json as Obj) };
  }

  private lookupAny(url: string): protobuf.Type {
    const name = url.slice(url.lastIndexOf('/') + 1);
    try {
      const t = this.root.lookupType(name);
      t.resolveAll();
      return t;
    } catch {
      throw new JsonMappingError(`Any: type ${JSON.stringify(url)} is not in the .proto files`);
    }
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
    if (field.map) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new JsonMappingError(`${where}: expected a JSON object for a map`);
      const out: Obj = {};
      for (const [k, mv] of Object.entries(v as Obj)) out[k] = this.valueFromJson(field, mv, `${where}.${k}`);
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
      if (typeof v === 'number' && Number.isInteger(v)) return v;
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
    const { '@type': url, ...rest } = json as Obj;
    if (typeof url !== 'string') throw new JsonMappingError(`${at}: an Any needs "@type"`);
    const inner = this.lookupAny(url);
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

/** A scalar from JSON (or from a path or query text, where every value is a string). */
export function scalarFromJson(type: string, v: unknown, where: string): unknown {
  const bad = (what: string): JsonMappingError => new JsonMappingError(`${where}: ${JSON.stringify(v)} is not ${what}`);
  if (INT32.has(type) || INT64.has(type)) {
    const text = typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim() : undefined;
    if (text === undefined || !/^-?\d+$/u.test(text)) throw bad(`an integer (${type})`);
    if (UNSIGNED.has(type) && text.startsWith('-')) throw bad(`an unsigned integer (${type})`);
    if (INT32.has(type)) {
      const n = Number(text);
      if (UNSIGNED.has(type) ? n > 0xffffffff : n < -0x80000000 || n > 0x7fffffff) throw bad(`within ${type}`);
      return n;
    }
    return text;
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

// Timestamps lie between 0001-01-01 and 9999-12-31 (timestamp.proto).
const MIN_SECONDS = -62135596800;
const MAX_SECONDS = 253402300799;

function parseTimestamp(json: unknown, at: string): Obj {
  const m = typeof json === 'string' ? /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/u.exec(json) : null;
  if (!m) throw new JsonMappingError(`${at}: ${JSON.stringify(json)} is not an RFC 3339 timestamp`);
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(ms)) throw new JsonMappingError(`${at}: ${JSON.stringify(json)} is not a valid date`);
  const seconds = Math.floor(ms / 1000);
  if (seconds < MIN_SECONDS || seconds > MAX_SECONDS) throw new JsonMappingError(`${at}: ${JSON.stringify(json)} is out of the Timestamp range`);
  return { seconds: String(seconds), nanos: m[2] ? Number(m[2].padEnd(9, '0')) : 0 };
}

function parseDuration(json: unknown, at: string): Obj {
  const m = typeof json === 'string' ? /^(-)?(\d+)(?:\.(\d{1,9}))?s$/u.exec(json) : null;
  if (!m) throw new JsonMappingError(`${at}: ${JSON.stringify(json)} is not a duration like "1.5s"`);
  const sign = m[1] ? -1 : 1;
  const nanos = m[3] ? Number(m[3].padEnd(9, '0')) : 0;
  return { seconds: `${m[1] ?? ''}${m[2]}`, nanos: sign * nanos };
}
