// A REST request as the gRPC request message its binding describes
// (google/api/http.proto): path variables fill their fields, then the body
// (`*`: the whole message; a field name: that field), then — unless the body
// took the whole message — query parameters fill the remaining fields by their
// dotted paths (`?page_size=10&filter.customer=ann`, proto or JSON names;
// repeated fields by repeating the parameter).
import protobuf from 'protobufjs';
import type { HttpBinding, BoundVariable } from '../route/http-binding.ts';
import { fieldByJsonOrProtoName, JsonMappingError, type JsonMapping } from '../route/json-mapping.ts';

type Obj = Record<string, unknown>;

function parseJson(body: Buffer): unknown {
  if (body.length === 0) return {};
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new JsonMappingError(`the body is not JSON: ${(e as Error).message}`);
  }
}

/** Sets the field at `names` (each a proto or JSON name) from a text value, creating the messages on the way. */
function setFromText(json: JsonMapping, type: protobuf.Type, target: Obj, names: readonly string[], text: string, from: string): void {
  let t = type;
  let obj = target;
  for (let i = 0; i < names.length; i++) {
    const field = fieldByJsonOrProtoName(t, names[i]!);
    if (!field) throw new JsonMappingError(`${from} "${names.join('.')}" names no field of ${t.name}`);
    field.resolve();
    if (i < names.length - 1) {
      if (field.repeated || !(field.resolvedType instanceof protobuf.Type)) throw new JsonMappingError(`${from} "${names.join('.')}": "${names[i]}" is not a message field`);
      obj = (obj[field.name] ??= {}) as Obj;
      t = field.resolvedType;
      continue;
    }
    if (field.map) throw new JsonMappingError(`${from} "${names.join('.')}" is a map field`);
    const rt = field.resolvedType;
    const v = json.valueFromJson(field, rt instanceof protobuf.Enum && /^-?\d+$/u.test(text) ? Number(text) : text, names.join('.'));
    if (field.repeated) ((obj[field.name] ??= []) as unknown[]).push(v);
    else obj[field.name] = v;
  }
}

export function restRequestMessage(json: JsonMapping, binding: HttpBinding, values: Map<BoundVariable, string>, query: string, body: Buffer): Uint8Array {
  const type = binding.requestType;
  let obj: Obj = {};
  if (binding.body === '*') obj = json.fromJson(type, parseJson(body));
  else if (binding.body !== '') {
    const field = type.fields[binding.body]!;
    const parsed = parseJson(body);
    if (parsed !== null) obj[field.name] = json.fieldFromJson(field, parsed, binding.body);
  }
  for (const [v, text] of values) setFromText(json, type, obj, v.path, text, 'path variable');
  if (binding.body !== '*' && query !== '') {
    const bound = new Set(binding.variables.map((v) => v.path.join('.')));
    for (const [name, text] of new URLSearchParams(query)) {
      if (bound.has(name)) continue;
      setFromText(json, type, obj, name.split('.'), text, 'query parameter');
    }
  }
  return type.encode(type.fromObject(obj)).finish();
}

/** The response message (or its response_body field) as proto3 JSON. */
export function restResponseJson(json: JsonMapping, binding: HttpBinding, message: Uint8Array): unknown {
  const type = binding.responseType;
  const decoded = type.decode(message) as unknown as Obj;
  if (binding.responseBody === '') return json.toJson(type, decoded);
  const field = type.fields[binding.responseBody]!;
  return json.fieldJson(field, Object.prototype.hasOwnProperty.call(decoded, field.name) ? decoded[field.name] : undefined);
}
