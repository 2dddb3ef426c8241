// What a request is, from its method, path, query and content-type alone: the
// first decision of every call, pure and table-driven so that a corpus of real
// request heads can test it.
import type { Encoding, Protocol } from './vocabulary.ts';
import { TrpcCall, trpcBatch, trpcProcedures } from './trpc-call.ts';
import { headerText } from './header-text.ts';

export interface Detected {
  protocol: Protocol;
  encoding: Encoding;
  /** The body is a sequence of length-prefixed messages (5-byte envelope). */
  framed: boolean;
  /** gRPC-Web text mode: the framed body is base64 on the wire. */
  base64: boolean;
  /** tRPC: the procedures the request names, read from its path. */
  trpc?: TrpcCall;
}

/** gRPC, gRPC-Web and Connect: calls that want an HTTP/2 upstream (or the gRPC one). */
export function isGrpcFamily(protocol: Protocol): boolean {
  return protocol !== 'rest' && protocol !== 'trpc';
}

interface FramedType {
  protocol: Protocol;
  base64: boolean;
  /** Encoding when the media type has no `+codec` suffix. */
  bare: Encoding;
}

// Keyed by the media type's base (before any `+codec`), so `application/grpcfoo`
// matches nothing.
// - gRPC over HTTP/2 (grpc/grpc PROTOCOL-HTTP2.md): application/grpc[+proto|+json|+codec]; bare means proto.
// - gRPC-Web (PROTOCOL-WEB.md): application/grpc-web[+codec]; -text is base64 on the wire.
// - Connect streaming (connectrpc.com/docs/protocol): application/connect+proto|+json.
const FRAMED_TYPES: ReadonlyMap<string, FramedType> = new Map([
  ['application/grpc', { protocol: 'grpc', base64: false, bare: 'proto' }],
  ['application/grpc-web', { protocol: 'grpc_web', base64: false, bare: 'proto' }],
  ['application/grpc-web-text', { protocol: 'grpc_web', base64: true, bare: 'text' }],
  ['application/connect', { protocol: 'connect', base64: false, bare: 'other' }],
]);

const CODECS: Readonly<Record<string, Encoding>> = { proto: 'proto', json: 'json' };

function mediaType(contentType: string | undefined): string {
  if (!contentType) return '';
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/** Encoding of a Connect unary call or a REST body from its media type. */
function bodyEncoding(media: string): Encoding {
  if (media === 'application/proto' || media === 'application/x-protobuf' || media === 'application/protobuf') return 'proto';
  if (media === 'application/json' || media.endsWith('+json')) return 'json';
  return 'other';
}

/**
 * The last content-type that named a framed protocol, and what it said: a framed
 * protocol (gRPC, gRPC-Web, Connect streaming) is read off the content-type alone,
 * and a connection's calls send the same one call after call, so a repeat is one
 * comparison (no trimming, lower-casing or lookup) and the same frozen answer.
 */
let lastFramedType: string | undefined;
let lastFramed: Detected | undefined;

const REST: Detected = Object.freeze({ protocol: 'rest', encoding: 'other', framed: false, base64: false }) as Detected;

/**
 * Classify one request.
 * `query` is the raw query string without `?` (Connect unary GET carries `connect=v1`
 * and `encoding=` there); `connectVersion` is the `connect-protocol-version` header.
 * A request that is neither gRPC nor Connect and whose `path` (without its query)
 * lies under `trpcPrefix` is tRPC.
 */
export function detect(method: string, contentType: string | undefined, connectVersion: string | undefined, query: string, path = '', trpcPrefix = ''): Detected {
  if (contentType !== undefined && contentType === lastFramedType) return lastFramed!;
  const media = mediaType(contentType);
  const plus = media.indexOf('+');
  const framed = FRAMED_TYPES.get(plus < 0 ? media : media.slice(0, plus));
  if (framed) {
    const encoding = framed.base64 ? 'text' : plus < 0 ? framed.bare : (CODECS[media.slice(plus + 1)] ?? 'other');
    const detected = Object.freeze({ protocol: framed.protocol, encoding, framed: true, base64: framed.base64 }) as Detected;
    lastFramedType = contentType;
    lastFramed = detected;
    return detected;
  }
  // Connect unary POST: any codec's media type plus the protocol version header.
  if (connectVersion !== undefined && method !== 'GET') {
    return { protocol: 'connect', encoding: bodyEncoding(media), framed: false, base64: false };
  }
  // Connect unary GET: the message rides in the query (`connect=v1&encoding=json&message=...`).
  if (method === 'GET' && hasQueryParam(query, 'connect', 'v1')) {
    const enc = queryParam(query, 'encoding');
    return { protocol: 'connect', encoding: enc === 'json' ? 'json' : enc === 'proto' ? 'proto' : 'other', framed: false, base64: false };
  }
  const procedures = trpcProcedures(path, trpcPrefix);
  if (procedures !== undefined) {
    // tRPC bodies are JSON (superjson and the like are JSON too); a mutation may send FormData or bytes.
    const enc = media === '' ? 'json' : bodyEncoding(media);
    return { protocol: 'trpc', encoding: enc === 'other' && media !== '' ? 'other' : 'json', framed: false, base64: false, trpc: new TrpcCall(procedures, trpcBatch(query)) };
  }
  if (media === '') return REST;
  const enc = bodyEncoding(media);
  return enc === 'other' ? REST : { protocol: 'rest', encoding: enc, framed: false, base64: false };
}

function queryParam(query: string, name: string): string | undefined {
  if (query === '') return undefined;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    if (key === name) return eq < 0 ? '' : pair.slice(eq + 1);
  }
  return undefined;
}

function hasQueryParam(query: string, name: string, value: string): boolean {
  return queryParam(query, name) === value;
}


/** A request, from its method, its path (query and all) and its headers: what it is, and its path without the query. */
export function detectRequest(
  method: string,
  path: string,
  headers: { readonly [name: string]: string | readonly string[] | number | undefined },
  trpcPrefix: string,
): { detected: Detected; bare: string; contentType: string | undefined } {
  const q = path.indexOf('?');
  const bare = q < 0 ? path : path.slice(0, q);
  const contentType = headerText(headers['content-type']);
  const detected = detect(method, contentType, headerText(headers['connect-protocol-version']), q < 0 ? '' : path.slice(q + 1), bare, trpcPrefix);
  return { detected, bare, contentType };
}
