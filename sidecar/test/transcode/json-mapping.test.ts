// The proto3 JSON mapping (src/route/json-mapping.ts) at the edges of its
// values, each test a finding of the json-mapping fuzz target: what does not fit
// is a JsonMappingError naming the field (a request answered 400, an answer
// failing the call INTERNAL), never another value. The spec:
// protobuf.dev/programming-guides/json.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { JsonMapping, JsonMappingError } from '../../src/route/json-mapping.ts';

type Obj = Record<string, unknown>;

const PROTO = `
syntax = "proto3";
package t;
import "google/protobuf/any.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";

enum Kind { KIND_UNSPECIFIED = 0; }

message Ints {
  int32 i32 = 1; uint32 u32 = 2; sint32 s32 = 3; fixed32 f32 = 4; sfixed32 sf32 = 5;
  int64 i64 = 6; uint64 u64 = 7; sint64 s64 = 8; fixed64 f64 = 9; sfixed64 sf64 = 10;
  Kind kind = 11;
}

message Maps {
  map<int64, string> by_int64 = 1;
  map<uint64, string> by_uint64 = 2;
  map<sint64, string> by_sint64 = 3;
  map<fixed64, string> by_fixed64 = 4;
  map<sfixed64, string> by_sfixed64 = 5;
  map<bool, bytes> by_bool = 6;
  map<uint32, string> by_uint32 = 7;
  map<string, Ints> by_name = 8;
  google.protobuf.Struct doc = 9;
}

message Times {
  google.protobuf.Timestamp at = 1;
  google.protobuf.Duration after = 2;
  google.protobuf.Any any = 3;
}
`;

function loadRoot(): protobuf.Root {
  const root = new protobuf.Root();
  const parsed = protobuf.parse(PROTO, root, { keepCase: true });
  for (const i of parsed.imports ?? []) {
    const bundled = protobuf.common.get(i) as { nested?: protobuf.INamespace['nested'] } | null;
    if (bundled?.nested) root.addJSON(bundled.nested);
  }
  root.resolveAll();
  return root;
}

const root = loadRoot();
const Ints = root.lookupType('t.Ints');
const Maps = root.lookupType('t.Maps');
const Times = root.lookupType('t.Times');
const mapping = new JsonMapping(root, 'json');

/** A request body as the bytes that go to the upstream. */
function request(type: protobuf.Type, json: unknown): Uint8Array {
  return type.encode(type.fromObject(mapping.fromJson(type, json))).finish();
}

/** An upstream's answer, built from a protobufjs object, as the JSON the caller gets. */
function answer(type: protobuf.Type, obj: Obj): unknown {
  return mapping.toJson(type, type.decode(type.encode(type.fromObject(obj)).finish()) as unknown as Obj);
}

function roundTrip(type: protobuf.Type, json: unknown): unknown {
  return mapping.toJson(type, type.decode(request(type, json)) as unknown as Obj);
}

function refused(f: () => unknown, message: RegExp): void {
  assert.throws(f, (err: unknown) => err instanceof JsonMappingError && message.test(err.message));
}

test("an integer out of its type's range is refused, naming the field, not wrapped", () => {
  refused(() => request(Ints, { i64: '9223372036854775808' }), /^i64: "9223372036854775808" is not within the range of int64$/u);
  refused(() => request(Ints, { u64: '18446744073709551617' }), /^u64: "18446744073709551617" is not within the range of uint64$/u);
  refused(() => request(Ints, { s64: '99999999999999999999' }), /^s64: "99999999999999999999" is not within the range of sint64$/u);
  refused(() => request(Ints, { f64: '18446744073709551616' }), /^f64: .* fixed64$/u);
  refused(() => request(Ints, { sf64: '-9223372036854775809' }), /^sf64: .* sfixed64$/u);
  refused(() => request(Ints, { i32: 2147483648 }), /^i32: 2147483648 is not within the range of int32$/u);
  refused(() => request(Ints, { u32: '4294967296' }), /^u32: .* uint32$/u);
  refused(() => request(Ints, { s32: -2147483649 }), /^s32: .* sint32$/u);
  refused(() => request(Ints, { f32: '4294967296' }), /^f32: .* fixed32$/u);
  refused(() => request(Ints, { sf32: '2147483648' }), /^sf32: .* sfixed32$/u);
  refused(() => request(Ints, { u64: '-1' }), /^u64: "-1" is not an unsigned integer \(uint64\)$/u);
  refused(() => request(Ints, { f32: -1 }), /^f32: -1 is not an unsigned integer \(fixed32\)$/u);
  // A number past 2^64 as JSON writes it (1e+21): out of range, not "not an integer".
  refused(() => request(Ints, { i64: 1e21 }), /^i64: 1e\+21 is not within the range of int64$/u);
  refused(() => request(Ints, { kind: 2 ** 31 }), /^kind: 2147483648 is not a value of Kind$/u);
  for (const v of ['1.5', 1.5, '1e3', '0x10', '', ' ']) {
    refused(() => request(Ints, { i32: v }), /is not an integer \(int32\)$/u);
    refused(() => request(Ints, { i64: v }), /is not an integer \(int64\)$/u);
  }
});

test('each integer type keeps the ends of its range', () => {
  const ends = { i32: -2147483648, u32: 4294967295, s32: 2147483647, f32: 4294967295, sf32: -2147483648, i64: '-9223372036854775808', u64: '18446744073709551615', s64: '9223372036854775807', f64: '18446744073709551615', sf64: '-9223372036854775808' };
  assert.deepEqual(roundTrip(Ints, ends), ends);
  assert.deepEqual(roundTrip(Ints, { i32: '7', i64: 7, u64: ' 0012 ', kind: 5 }), { i32: 7, i64: '7', u64: '12', kind: 5 });
  // A JSON number past 2^53 as its own value: its shortest text, "1152921504606847000", is another number.
  assert.deepEqual(roundTrip(Ints, { i64: 2 ** 60 }), { i64: '1152921504606846976' });
});

test("64-bit map keys are written in decimal, not as protobufjs' 8-byte hashes", () => {
  const maps = { byInt64: { '-1': 'a', '9223372036854775807': 'b' }, byUint64: { '18446744073709551615': 'c' }, bySint64: { '-9223372036854775808': 'd' }, byFixed64: { '1': 'e' }, bySfixed64: { '-2': 'f' } };
  assert.deepEqual(roundTrip(Maps, maps), maps);
  // An entry without a key has the default key, 0.
  assert.deepEqual(mapping.toJson(Maps, Maps.decode(Buffer.from('0a03120178', 'hex')) as unknown as Obj), { byInt64: { '0': 'x' } });
});

test('bool map keys are "true" and "false", and nothing else', () => {
  assert.deepEqual(Buffer.from(request(Maps, { byBool: { false: 'AQ==' } })).toString('hex'), '32050800120101');
  assert.deepEqual(Buffer.from(request(Maps, { byBool: { true: 'AQ==' } })).toString('hex'), '32050801120101');
  assert.deepEqual(roundTrip(Maps, { byBool: { false: 'AA==', true: 'AQ==' } }), { byBool: { false: 'AA==', true: 'AQ==' } });
  refused(() => request(Maps, { byBool: { yes: 'AQ==' } }), /^byBool \(a key\): "yes" is not true or false$/u);
  refused(() => request(Maps, { byBool: { '1': 'AQ==' } }), /^byBool \(a key\): "1" is not true or false$/u);
});

test('other map keys are checked as their key type', () => {
  refused(() => request(Maps, { byInt64: { abc: 'x' } }), /^byInt64 \(a key\): "abc" is not an integer \(int64\)$/u);
  refused(() => request(Maps, { byUint64: { '18446744073709551616': 'x' } }), /^byUint64 \(a key\): .* uint64$/u);
  refused(() => request(Maps, { byUint32: { '-1': 'x' } }), /^byUint32 \(a key\): "-1" is not an unsigned integer \(uint32\)$/u);
  assert.deepEqual(roundTrip(Maps, { byUint32: { '4294967295': 'x', '007': 'y' } }), { byUint32: { '4294967295': 'x', '7': 'y' } });
});

test('a map entry without its message value is the empty message', () => {
  // by_name entry {key: "a"} with no value; doc (a Struct) with a field "k" and no Value.
  assert.deepEqual(mapping.toJson(Maps, Maps.decode(Buffer.from('42030a0161', 'hex')) as unknown as Obj), { byName: { a: {} } });
  assert.deepEqual(mapping.toJson(Maps, Maps.decode(Buffer.from('4a050a030a016b', 'hex')) as unknown as Obj), { doc: { k: null } });
});

test('an Any must name a message type by its full name', () => {
  for (const url of ['', '.', 'type.googleapis.com/', 'x/.', 'type.googleapis.com/Ints', 'type.googleapis.com/t', 'type.googleapis.com/t.Nope']) {
    refused(() => request(Times, { any: { '@type': url } }), new RegExp(`^any: the Any's type ${JSON.stringify(url).replaceAll('.', '\\.')} names no message type of the \\.proto files$`, 'u'));
  }
  assert.deepEqual(roundTrip(Times, { any: { '@type': 'type.googleapis.com/t.Ints', i64: '-1' } }), { any: { '@type': 'type.googleapis.com/t.Ints', i64: '-1' } });
  assert.deepEqual(roundTrip(Times, { any: { '@type': 'x/google.protobuf.Duration', value: '1s' } }), { any: { '@type': 'x/google.protobuf.Duration', value: '1s' } });
  // The empty Any is written {}, and reads back.
  assert.deepEqual(roundTrip(Times, { any: {} }), { any: {} });
});

test('an answer with an Any of no known type, or of bytes its type cannot decode, is refused', () => {
  refused(() => answer(Times, { any: { type_url: 'x/', value: Buffer.from('0801', 'hex') } }), /^any: the Any's type "x\/" names no message type/u);
  refused(() => answer(Times, { any: { type_url: 'x/t.Ints', value: Buffer.from('08ff', 'hex') } }), /^any: the Any's value is not a t\.Ints: /u);
});

test("an answer's Timestamp outside 0001-01-01 to 9999-12-31, or with nanos outside 0 to 999,999,999, is refused", () => {
  for (const [seconds, nanos] of [['253402300800', 0], ['-62135596801', 0], ['1000000000000000', 0], ['1', -5], ['1', 1e9]] as const) {
    refused(() => answer(Times, { at: { seconds, nanos } }), new RegExp(`^at: a Timestamp of ${seconds} s ${nanos} ns is outside 0001-01-01T00:00:00Z to 9999-12-31T23:59:59\\.999999999Z$`, 'u'));
  }
  assert.deepEqual(answer(Times, { at: { seconds: '-62135596800' } }), { at: '0001-01-01T00:00:00Z' });
  assert.deepEqual(answer(Times, { at: { seconds: '253402300799', nanos: 999999999 } }), { at: '9999-12-31T23:59:59.999999999Z' });
  // RFC 3339 with 0, 3, 6 or 9 fractional digits.
  for (const [nanos, text] of [[5e6, '.005'], [5e3, '.000005'], [5, '.000000005'], [120000000, '.120']] as const) {
    assert.deepEqual(answer(Times, { at: { seconds: 1, nanos } }), { at: `1970-01-01T00:00:01${text}Z` });
  }
});

test("a request's Timestamp must be a real date within the range", () => {
  for (const text of ['9999-12-31T23:59:59.999999999-00:01', '0001-01-01T00:00:00+00:01', '0000-12-31T23:59:59Z']) {
    refused(() => request(Times, { at: text }), /^at: .* is outside 0001-01-01T00:00:00Z to 9999-12-31T23:59:59\.999999999Z$/u);
  }
  refused(() => request(Times, { at: '+010000-01-01T00:00:00Z' }), /is not an RFC 3339 timestamp$/u);
  // Date.parse would take these as March 2nd and the next day.
  for (const text of ['2023-02-30T00:00:00Z', '2023-02-29T00:00:00Z', '2023-01-01T24:00:00Z']) refused(() => request(Times, { at: text }), /^at: .* is not a valid date$/u);
  assert.deepEqual(roundTrip(Times, { at: '2024-02-29T23:59:59.5+01:00' }), { at: '2024-02-29T22:59:59.500Z' });
  assert.deepEqual(roundTrip(Times, { at: '0001-01-01T00:00:00Z' }), { at: '0001-01-01T00:00:00Z' });
  assert.deepEqual(roundTrip(Times, { at: '9999-12-31T23:59:59.999999999Z' }), { at: '9999-12-31T23:59:59.999999999Z' });
});

test("a Duration stays within ±315,576,000,000 s, its nanos of the seconds' sign, both ways", () => {
  for (const [seconds, nanos] of [['315576000001', 0], ['-315576000001', 0], ['1', -1], ['-1', 1], ['0', 1e9], ['0', -1e9]] as const) {
    refused(() => answer(Times, { after: { seconds, nanos } }), new RegExp(`^after: a Duration of ${seconds} s ${nanos} ns is outside ±315576000000\\.999999999s$`, 'u'));
  }
  for (const text of ['315576000001s', '-315576000001s', '99999999999999999999s']) refused(() => request(Times, { after: text }), /^after: .* is outside ±315576000000\.999999999s$/u);
  assert.deepEqual(answer(Times, { after: { seconds: '-315576000000', nanos: -999999999 } }), { after: '-315576000000.999999999s' });
  assert.deepEqual(answer(Times, { after: { seconds: 0, nanos: -500000000 } }), { after: '-0.500s' });
  for (const text of ['315576000000.999999999s', '-315576000000.999999999s', '-0.5s', '-0.000000001s']) assert.deepEqual(roundTrip(Times, { after: text }), { after: text === '-0.5s' ? '-0.500s' : text });
});
