// Errors with stable codes, in the manner of undici's UND_ERR_*: whatever the
// sidecar raises itself carries a `code` that stays the same from release to
// release, so that a catch site (and a user reading a log line or a 503 body)
// branches on the code, never on a message or on which module's class it is.
// The second table names the Node error codes the sidecar reacts to, each once,
// with why it matters.

/** Codes of the errors rpcscope raises itself. */
export const ErrorCode = {
  /** A connection to an upstream was not made within --connect-timeout. */
  CONNECT_TIMEOUT: 'RPCSCOPE_ERR_CONNECT_TIMEOUT',
  /** An https:// upstream did not agree to HTTP/2 in ALPN where the relay needs it. */
  ALPN_NOT_H2: 'RPCSCOPE_ERR_ALPN_NOT_H2',
  /** An https:// upstream refused ALPN http/1.1, or chose another protocol, where the HTTP/1.1 relay asked for it. */
  ALPN_NOT_HTTP1: 'RPCSCOPE_ERR_ALPN_NOT_HTTP1',
  /**
   * An endpoint's HTTP/1.1 connections (--upstream-max-connections) were all busy
   * and --upstream-max-pending calls already waited: the endpoint is busy, not
   * down, and stays in rotation with what it was learnt to speak.
   */
  QUEUE_FULL: 'RPCSCOPE_ERR_QUEUE_FULL',
  /**
   * A connection answered no PING (and sent nothing) within --keepalive-timeout; or,
   * over HTTP/1.1, its endpoint sent nothing for --keepalive-interval while calls
   * waited and took no TCP connection within --keepalive-timeout: its peer is taken for gone.
   */
  KEEPALIVE_TIMEOUT: 'RPCSCOPE_ERR_KEEPALIVE_TIMEOUT',
  /** A request body was over the size a translated call reads whole. */
  BODY_TOO_LARGE: 'RPCSCOPE_ERR_BODY_TOO_LARGE',
  /** A setting, or a file a setting names, cannot be used: the start (or --check) stops with exit 2. */
  CONFIG: 'RPCSCOPE_ERR_CONFIG',
  /** The relay read a frame that breaks RFC 9113; the error carries the HTTP/2 code the connection ends with. */
  H2_FRAME: 'RPCSCOPE_ERR_H2_FRAME',
  /**
   * An HTTP/1.1 message the strict parser refuses (RFC 9112): the error carries
   * the status a request is answered with and a stable reason (h1/h1-error.ts).
   */
  H1_MESSAGE: 'RPCSCOPE_ERR_H1_MESSAGE',
  /** A header block the HPACK decoder refuses (RFC 7541): a COMPRESSION_ERROR for the connection. */
  HPACK: 'RPCSCOPE_ERR_HPACK',
  /** A JSON value the proto3 JSON mapping refuses: the caller's (INVALID_ARGUMENT) in a request, the upstream's (INTERNAL) in an answer. */
  JSON_MAPPING: 'RPCSCOPE_ERR_JSON_MAPPING',
  /** A google.api.http rule that cannot work, naming its file, rule and field. */
  HTTP_BINDING: 'RPCSCOPE_ERR_HTTP_BINDING',
  /** A command-line tool (diagnose, top, tap) was given arguments it cannot use. */
  USAGE: 'RPCSCOPE_ERR_USAGE',
  /** The Prometheus HTTP API a command-line tool asked could not answer. */
  PROMETHEUS_API: 'RPCSCOPE_ERR_PROMETHEUS_API',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export class RpcscopeError extends Error {
  constructor(readonly code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RpcscopeError';
  }
}

/** Whether `err` is rpcscope's error with `code`: what a catch site branches on. */
export function hasCode(err: unknown, code: ErrorCode): err is RpcscopeError {
  return err instanceof RpcscopeError && err.code === code;
}

export function connectTimeout(ms: number): RpcscopeError {
  return new RpcscopeError(ErrorCode.CONNECT_TIMEOUT, `connect timeout after ${ms} ms`);
}

/**
 * Node's error codes the sidecar branches on
 * (https://nodejs.org/api/errors.html#nodejs-error-codes).
 */
export const NodeErrorCode = {
  /** A stream still waiting for its session when the peer's GOAWAY closed it: never sent, safe to send again. */
  HTTP2_GOAWAY_SESSION: 'ERR_HTTP2_GOAWAY_SESSION',
  /** The peer reset the stream (RST_STREAM): its code is on the stream. */
  HTTP2_STREAM_ERROR: 'ERR_HTTP2_STREAM_ERROR',
  /** The session ended with an HTTP/2 error code of its own. */
  HTTP2_SESSION_ERROR: 'ERR_HTTP2_SESSION_ERROR',
  /** nghttp2 refused what the peer sent. */
  HTTP2_ERROR: 'ERR_HTTP2_ERROR',
  /**
   * Node's own count: empty DATA frames without END_STREAM and frames nghttp2 found
   * invalid, past maxSessionInvalidFrames (1000), end the session with this code.
   */
  HTTP2_TOO_MANY_INVALID_FRAMES: 'ERR_HTTP2_TOO_MANY_INVALID_FRAMES',
  /** A TLS client did not finish its handshake in time. */
  TLS_HANDSHAKE_TIMEOUT: 'ERR_TLS_HANDSHAKE_TIMEOUT',
  /** The TLS peer offered none of our ALPN protocols. */
  TLS_NO_APPLICATION_PROTOCOL: 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL',
  /** The listen address is taken. */
  ADDRESS_IN_USE: 'EADDRINUSE',
} as const;

/** The `code` of anything thrown, if it has one. */
export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
