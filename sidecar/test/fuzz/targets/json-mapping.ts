// Fuzz target: the proto3 JSON mapping the REST transcoder reads requests and
// writes responses with (src/route/json-mapping.ts), over json-mapping.proto
// beside this file, which has every kind of field the mapping treats apart.
//
// Input: [options] [field] [payload…]. Options: bits 0–1 the mode, bit 2 proto
// field names in output (--json-names proto).
//   mode 0, 1  payload is a JSON request body for fuzz.v1.All
//   mode 2     payload is an upstream's protobuf answer, fuzz.v1.All
//   mode 3     payload is one scalar's value for the Scalars field chosen by
//              [field]: JSON, or with bit 7 of [field] set, path or query text
//
// Findings: an exception but JsonMappingError from reading JSON; for an answer,
// an exception but protobufjs refusing the bytes or a JsonMappingError for a
// value JSON cannot carry (an Any of no known type, a Timestamp out of range);
// a JsonMappingError writing a message read from JSON; JSON written that the
// mapping cannot read back, or that reads back to another message; a scalar
// accepted and stored as another value.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs';
import type { FuzzTarget } from '../engine.ts';
import { JsonMapping, JsonMappingError, jsonNameOf } from '../../../src/route/json-mapping.ts';

type Obj = Record<string, unknown>;

function loadRoot(): protobuf.Root {
  const root = new protobuf.Root();
  const parsed = protobuf.parse(readFileSync(new URL('json-mapping.proto', import.meta.url), 'utf8'), root, { keepCase: true, alternateCommentMode: true });
  // As the transcoder loads them: well-known imports from protobufjs' bundled copies.
  for (const i of parsed.imports ?? []) {
    const bundled = protobuf.common.get(i) as { nested?: protobuf.INamespace['nested'] } | null;
    if (bundled?.nested) root.addJSON(bundled.nested);
  }
  root.resolveAll();
  return root;
}

const root = loadRoot();
const All = root.lookupType('fuzz.v1.All');
const Scalars = root.lookupType('fuzz.v1.Scalars');
const MAPPINGS = { json: new JsonMapping(root, 'json'), proto: new JsonMapping(root, 'proto') };
const INTS = new Set(['int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'fixed32', 'fixed64', 'sfixed32', 'sfixed64']);

/** JSON.parse, or undefined for text that is not JSON (the transcoder answers that itself). */
function parseJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/** fromJson, or undefined when it refuses the value as it documents. */
function read(mapping: JsonMapping, type: protobuf.Type, json: unknown): Uint8Array | undefined {
  let obj: Obj;
  try {
    obj = mapping.fromJson(type, json);
  } catch (err) {
    if (err instanceof JsonMappingError) return undefined;
    throw err;
  }
  return type.encode(type.fromObject(obj)).finish();
}

/**
 * toJson of a message, through text as it goes on the wire, read back: the same
 * message. An upstream's answer may hold a value JSON cannot carry, which toJson
 * refuses; a message read from JSON may not.
 */
function writeAndReadBack(mapping: JsonMapping, bytes: Uint8Array, answer: boolean): void {
  let text: string;
  try {
    text = JSON.stringify(mapping.toJson(All, All.decode(bytes) as unknown as Obj));
  } catch (err) {
    if (answer && err instanceof JsonMappingError) return;
    throw err;
  }
  const again = mapping.fromJson(All, JSON.parse(text));
  const reencoded = All.encode(All.fromObject(again)).finish();
  // Compared as text, as it goes out: JSON has no -0.
  assert.equal(JSON.stringify(mapping.toJson(All, All.decode(reencoded) as unknown as Obj)), text, 'JSON written reads back to another message');
}

function checkScalar(mapping: JsonMapping, field: protobuf.Field, value: unknown): void {
  let stored: unknown;
  try {
    stored = mapping.valueFromJson(field, value, field.name);
  } catch (err) {
    if (err instanceof JsonMappingError) return;
    throw err;
  }
  const decoded = Scalars.decode(Scalars.encode(Scalars.fromObject({ [field.name]: stored })).finish()) as unknown as Obj;
  const written = mapping.toJson(Scalars, decoded) as Obj;
  const out = written[jsonNameOf(field)] ?? written[field.name];
  const what = `${field.type} ${JSON.stringify(value)} read, ${JSON.stringify(out)} written`;
  if (INTS.has(field.type)) {
    // A number's own value: past 2^53 its shortest text (String) ends in made-up zeros.
    const n = typeof value === 'string' ? BigInt(value.trim()) : BigInt(value as number);
    assert.equal(BigInt(out === undefined ? 0 : (out as string | number)), n, what);
  } else if (field.type === 'double' || field.type === 'float') {
    const want = Number(value);
    const got = out === undefined ? 0 : Number(out);
    // A default (±0) is left out of the JSON.
    assert.ok(Object.is(got, field.type === 'float' ? Math.fround(want) : want) || (got === 0 && want === 0), what);
  } else if (field.type === 'bool') assert.equal(out ?? false, value === true || value === 'true', what);
  else if (field.type === 'string') assert.equal(out ?? '', value, what);
  else if (field.type === 'bytes') assert.deepEqual(Buffer.from((out as string | undefined) ?? '', 'base64'), Buffer.from((value as string).replace(/-/g, '+').replace(/_/g, '/'), 'base64'), what);
}

export const target: FuzzTarget = {
  maxLength: 2048,
  run(data) {
    if (data.length < 2) return;
    const mode = data[0]! & 3;
    const mapping = data[0]! & 4 ? MAPPINGS.proto : MAPPINGS.json;
    const payload = data.subarray(2);
    if (mode === 2) {
      let decoded = false;
      try {
        All.decode(payload);
        decoded = true;
      } catch {
        // Not an All: protobufjs says so, and the transcoder answers INTERNAL.
      }
      if (decoded) writeAndReadBack(mapping, payload, true);
      return;
    }
    const text = payload.toString('utf8');
    if (mode === 3) {
      const field = Scalars.fieldsArray[data[1]! % Scalars.fieldsArray.length]!;
      // Path variables and query parameters are text; a body's fields are JSON.
      return checkScalar(mapping, field, data[1]! & 0x80 ? text : parseJson(text)?.value);
    }
    const json = parseJson(text);
    if (!json) return;
    const bytes = read(mapping, All, json.value);
    if (bytes) writeAndReadBack(mapping, bytes, false);
  },
  seeds: [
    [0, 0, { scalars: { fDouble: 1.5, fFloat: -2.25, fInt32: -7, fInt64: '-9007199254740993', fUint32: 4294967295, fUint64: '18446744073709551615', fSint32: 3, fSint64: '-4', fFixed32: 5, fFixed64: '6', fSfixed32: -8, fSfixed64: '-9', fBool: true, fString: 'héllo', fBytes: 'AQID', fKind: 'KIND_A' } }],
    [0, 0, { list: [{ fDouble: 'NaN' }, { fFloat: '-Infinity' }], byName: { a: { fKind: 2 } }, byInt64: { '-1': 'x' }, byUint32: { '7': 'KIND_B' }, byBool: { true: '_-8=' }, longs: ['1', 2], kinds: ['KIND_B', 7], doubles: [1e300, 'Infinity'] }],
    [4, 0, { nested: { text: 'in', maybe: 0 }, Renamed_Field: 'r', null_value: null, value: { a: [1, 'b', null, true, { c: {} }] } }],
    [0, 0, { at: '1972-01-01T10:00:20.021+01:00', after: '-1.000340012s', mask: 'fooBar.baz,qux', doc: { k: [1, 2] }, values: [null, 1.5], nothing: {} }],
    [0, 0, { any: { '@type': 'type.googleapis.com/fuzz.v1.Scalars', fInt32: 1 }, wInt64: '5', wUint64: 6, wInt32: -1, wUint32: 1, wDouble: 'NaN', wFloat: 1.5, wBool: false, wString: '', wBytes: '' }],
    [0, 0, { any: { '@type': 'type.googleapis.com/google.protobuf.Duration', value: '1s' } }],
    [3, 3, '-2147483648'],
    [3, 0x84, '18446744073709551615'],
    [3, 2, '"3.4028235e38"'],
    [3, 0x8e, '-_8='],
  ]
    .map(([options, field, json]) => Buffer.concat([Buffer.from([options as number, field as number]), Buffer.from(typeof json === 'string' ? json : JSON.stringify(json))]))
    .concat([
      // An answer: Scalars with an int64 and a string, a map entry, a Timestamp.
      Buffer.concat([Buffer.from([2, 0]), All.encode(All.fromObject({ scalars: { f_int64: '-5', f_string: 'x' }, by_int64: { '3': 'y' }, at: { seconds: 1, nanos: 5 } })).finish()]),
    ]),
  dictionary: [
    '{', '}', '[', ']', ':', ',', '"', 'null', 'true', 'false', '"NaN"', '"Infinity"', '"-Infinity"', '1e309', '-0', '\\u0000', '\\ud800', '"@type"',
    '"type.googleapis.com/fuzz.v1.All"', '"type.googleapis.com/google.protobuf.Value"', '"type.googleapis.com/google.protobuf.Timestamp"', '"value"',
    '"scalars"', '"list"', '"byName"', '"byInt64"', '"byUint32"', '"byBool"', '"longs"', '"kinds"', '"doubles"', '"text"', '"nested"', '"nothing"', '"maybe"',
    '"Renamed_Field"', '"renamed"', '"at"', '"after"', '"any"', '"doc"', '"value"', '"values"', '"mask"', '"null_value"', '"wInt64"', '"wUint64"', '"wFloat"', '"wBytes"',
    '"fInt64"', '"fUint64"', '"fFloat"', '"fBytes"', '"fKind"', '"KIND_A"', '"0001-01-01T00:00:00Z"', '"9999-12-31T23:59:59.999999999Z"', '"315576000000.999999999s"', '"a.b_c,dE"',
  ]
    .map((s) => Buffer.from(s))
    .concat(
      // Protobuf wire pieces for answers: the tags of at, after, any, doc, value, w_int64, nested; a 10-byte varint; a negative one.
      ['7a', '8201', '8a01', '9201', '9a01', 'ba01', '5a', '08', '10', '0880808080808080808001', 'ffffffffffffffffff01', '0a00', '1200'].map((h) => Buffer.from(h, 'hex')),
    ),
};
