// One google.api.http binding compiled for transcoding (googleapis
// google/api/http.proto): its path template as parts to match a request path
// against, the request fields its variables fill, and its body and
// response_body fields — every field name checked against the messages at
// start, so that a template naming `{orderId}` for a field `order_id` stops the
// start instead of answering 404 for ever.
//
//   Template = "/" Segments [ Verb ] ;   Segment = "*" | "**" | LITERAL | Variable ;
//   Variable = "{" FieldPath [ "=" Segments ] "}" ;   FieldPath = IDENT { "." IDENT } ;
//
// A variable without `=` matches one segment; `**` matches the rest of the path
// and may only come last; the verb is matched against the end of the last segment.
import type protobuf from 'protobufjs';
import { splitTopLevel } from './http-rule.ts';
import { ErrorCode, RpcscopeError } from '../core/errors.ts';

type Part = { kind: 'literal'; text: string } | { kind: 'star' } | { kind: 'rest' };

export interface BoundVariable {
  /** Proto field names, outermost first. */
  readonly path: readonly string[];
  /** The parts it covers: [from, to). */
  readonly from: number;
  readonly to: number;
}

export interface HttpBinding {
  readonly file: string;
  /** `pkg.Service/Method`: the gRPC path without its leading `/`, and the call's operation. */
  readonly rpc: string;
  readonly httpMethod: string;
  /** The path as the rule wrote it. */
  readonly pathText: string;
  readonly parts: readonly Part[];
  readonly verb: string | undefined;
  readonly variables: readonly BoundVariable[];
  /** '' (no body), '*' (the whole request) or a top-level field of the request. */
  readonly body: string;
  /** '' (the whole response) or a top-level field of the response. */
  readonly responseBody: string;
  readonly requestType: protobuf.Type;
  readonly responseType: protobuf.Type;
  readonly serverStreaming: boolean;
  /** The same route with variables as `*`: two bindings with one key claim one route. */
  readonly routeKey: string;
  /** Literal parts: the more, the earlier a binding is tried. */
  readonly literals: number;
}

/** A rule that cannot work: the message the start fails with, naming the file, the rule and the field. */
export class BindingError extends RpcscopeError {
  constructor(message: string) {
    super(ErrorCode.HTTP_BINDING, message);
    this.name = 'BindingError';
  }
}

function wildcardPart(seg: string, fail: (why: string) => never): Part {
  if (seg === '*') return { kind: 'star' };
  if (seg === '**') return { kind: 'rest' };
  if (seg === '' || /[{}*]/u.test(seg)) fail(`segment ${JSON.stringify(seg)} is not a literal, "*", "**" or a {variable}`);
  return { kind: 'literal', text: seg };
}

/** The field a path of names reaches, checked at each step: every step but the last a singular message. */
export function resolveFieldPath(type: protobuf.Type, path: readonly string[], fail: (why: string) => never, role: string): protobuf.Field {
  let t = type;
  for (let i = 0; i < path.length; i++) {
    const field = t.fields[path[i]!];
    if (!field) fail(`${role} "${path.join('.')}" names no field of ${t.fullName.slice(1)}${i === 0 ? '' : ` (in "${path.slice(0, i).join('.')}")`}`);
    if (i === path.length - 1) return field;
    field.resolve();
    if (field.repeated || !(field.resolvedType && 'fields' in field.resolvedType)) fail(`${role} "${path.join('.')}": "${path.slice(0, i + 1).join('.')}" is not a singular message field`);
    t = field.resolvedType as protobuf.Type;
  }
  return fail(`${role} is empty`);
}

export interface RuleSource {
  file: string;
  rpc: string;
  httpMethod: string;
  path: string;
  body: string;
  responseBody: string;
  requestType: protobuf.Type;
  responseType: protobuf.Type;
  serverStreaming: boolean;
}

export function compileBinding(src: RuleSource): HttpBinding {
  const where = `${src.file}: ${src.rpc} (google.api.http ${src.httpMethod.toLowerCase()} "${src.path}")`;
  const fail = (why: string): never => {
    throw new BindingError(`${where}: ${why}`);
  };
  if (!src.path.startsWith('/')) fail('the path must start with "/"');
  const segments = splitTopLevel(src.path.slice(1), '/');
  const last = splitTopLevel(segments.pop()!, ':');
  if (last.length > 2) fail('more than one verb');
  segments.push(last[0]!);
  const verb = last.length === 2 ? last[1] : undefined;
  const parts: Part[] = [];
  const variables: BoundVariable[] = [];
  const seen = new Set<string>();
  for (const seg of segments) {
    if (!seg.startsWith('{')) {
      parts.push(wildcardPart(seg, fail));
      continue;
    }
    if (!seg.endsWith('}')) fail(`segment ${JSON.stringify(seg)} has text after its variable`);
    const inner = seg.slice(1, -1);
    const eq = inner.indexOf('=');
    const name = eq < 0 ? inner : inner.slice(0, eq);
    const from = parts.length;
    for (const s of eq < 0 ? ['*'] : inner.slice(eq + 1).split('/')) parts.push(wildcardPart(s, fail));
    const path = name.split('.');
    const field = resolveFieldPath(src.requestType, path, fail, 'template variable');
    if (field.repeated || field.map) fail(`template variable "${name}" is a repeated field`);
    field.resolve();
    if (field.resolvedType && 'fields' in field.resolvedType) fail(`template variable "${name}" is a message field, not a string, number, bool or enum`);
    if (seen.has(name)) fail(`template variable "${name}" appears twice`);
    seen.add(name);
    variables.push({ path, from, to: parts.length });
  }
  const restAt = parts.findIndex((p) => p.kind === 'rest');
  if (restAt >= 0 && restAt !== parts.length - 1) fail('"**" must be the last segment');
  // http.proto allows a path variable inside the body field (`{order.name}` with body "order"): the path's value wins.
  if (src.body !== '' && src.body !== '*' && !src.requestType.fields[src.body]) fail(`body "${src.body}" names no field of ${src.requestType.fullName.slice(1)}`);
  if (src.responseBody !== '' && !src.responseType.fields[src.responseBody]) fail(`response_body "${src.responseBody}" names no field of ${src.responseType.fullName.slice(1)}`);
  const key = parts.map((p) => (p.kind === 'literal' ? p.text : p.kind === 'star' ? '*' : '**')).join('/');
  return {
    file: src.file,
    rpc: src.rpc,
    httpMethod: src.httpMethod,
    pathText: src.path,
    parts,
    verb,
    variables,
    body: src.body,
    responseBody: src.responseBody,
    requestType: src.requestType,
    responseType: src.responseType,
    serverStreaming: src.serverStreaming,
    routeKey: `${src.httpMethod} /${key}${verb === undefined ? '' : `:${verb}`}`,
    literals: parts.filter((p) => p.kind === 'literal').length,
  };
}

/**
 * The variables' values when `segments` (the request path split at `/`, still
 * percent-encoded) match the binding, else undefined. A value spanning several
 * segments keeps its `/`; each segment is percent-decoded.
 */
export function matchBinding(b: HttpBinding, segments: readonly string[]): Map<BoundVariable, string> | undefined {
  let segs = segments;
  if (b.verb !== undefined) {
    const lastSeg = segs[segs.length - 1];
    const suffix = `:${b.verb}`;
    if (lastSeg === undefined || !lastSeg.endsWith(suffix)) return undefined;
    segs = [...segs.slice(0, -1), lastSeg.slice(0, -suffix.length)];
  }
  const { parts } = b;
  const rest = parts.length > 0 && parts[parts.length - 1]!.kind === 'rest';
  if (rest ? segs.length < parts.length - 1 : segs.length !== parts.length) return undefined;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (p.kind === 'literal' && segs[i] !== p.text) return undefined;
    if (p.kind === 'star' && (segs[i] === '' || segs[i] === undefined)) return undefined;
  }
  const values = new Map<BoundVariable, string>();
  for (const v of b.variables) {
    const to = rest && v.to === parts.length ? segs.length : v.to;
    values.set(v, segs.slice(v.from, to).map(decodeURIComponent).join('/'));
  }
  return values;
}
