// CORS for browser callers of the translated paths (Fetch standard, "CORS
// protocol"): a preflight from a configured origin is answered here, and the
// answers to that origin carry the headers that let its script read them —
// the gRPC status fields included, which gRPC-Web clients read from headers of
// a trailers-only answer.
import type { Caller } from './caller.ts';

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
// The request fields gRPC-Web and Connect clients send (PROTOCOL-WEB.md; connect-web).
const DEFAULT_ALLOW_HEADERS = 'content-type, x-grpc-web, x-user-agent, grpc-timeout, connect-protocol-version, connect-timeout-ms, authorization';
const EXPOSE_HEADERS = 'grpc-status, grpc-message, grpc-status-details-bin, content-type';
/** How long a browser may reuse a preflight answer, in seconds. */
const MAX_AGE = '600';

export class Cors {
  private readonly any: boolean;
  private readonly origins: ReadonlySet<string>;

  constructor(origins: readonly string[]) {
    this.any = origins.includes('*');
    this.origins = new Set(origins);
  }

  /** The origin of the request when it is one answered with CORS headers. */
  /** Whether any origin is allowed: preflights are answered here only then. */
  get configured(): boolean {
    return this.any || this.origins.size > 0;
  }

  allowed(origin: string | string[] | undefined): string | undefined {
    if (typeof origin !== 'string') return undefined;
    return this.any || this.origins.has(origin) ? origin : undefined;
  }

  /** Headers for an answer to `origin`. */
  responseHeaders(origin: string | undefined): Record<string, string> {
    if (origin === undefined) return {};
    return { 'access-control-allow-origin': origin, vary: 'origin', 'access-control-expose-headers': EXPOSE_HEADERS };
  }

  /** Answers a preflight from an allowed origin; false when the request is not one. */
  preflight(method: string, caller: Caller): { status: number; headers: Record<string, string> } | undefined {
    if (method !== 'OPTIONS' || caller.headers['access-control-request-method'] === undefined) return undefined;
    const origin = this.allowed(caller.headers.origin);
    if (origin === undefined) return undefined;
    const asked = caller.headers['access-control-request-headers'];
    return {
      status: 204,
      headers: {
        'access-control-allow-origin': origin,
        vary: 'origin',
        'access-control-allow-methods': ALLOW_METHODS,
        'access-control-allow-headers': typeof asked === 'string' && asked !== '' ? asked : DEFAULT_ALLOW_HEADERS,
        'access-control-max-age': MAX_AGE,
      },
    };
  }
}
