// How a caller's HTTP/2 stream ended before its response did: a reset the client
// sent, or its connection lost. Node gives a stream cut with its connection the
// code INTERNAL_ERROR (a socket error) or NO_ERROR (a clean close) — a reset the
// client never sent. A lost connection is the client going away: CANCELLED,
// counted as CONNECTION_CLOSED, as an HTTP/1.1 connection closed mid-call is.
//
//   seen at the stream's 'close'                         recorded as
//   rstCode CANCEL                                       CANCEL (the client cancelled)
//   'error' ERR_HTTP2_STREAM_ERROR (a RST_STREAM frame)  its code
//   the session destroyed, no RST_STREAM frame           CONNECTION_CLOSED
//   otherwise                                            rstCode, else CANCEL
import type http2 from 'node:http2';
import { CONNECTION_CLOSED } from '../protocol/vocabulary.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { NodeErrorCode } from '../core/errors.ts';

/** Node's error for a stream the peer reset with a code other than NO_ERROR or CANCEL. */

/**
 * Watches a caller's stream from now on; the returned function gives the code its
 * end is recorded with. Called while the stream is open: `stream.session` is gone
 * once it is destroyed.
 */
export function watchClientReset(stream: http2.ServerHttp2Stream): () => number {
  const session = stream.session;
  let peerReset = false;
  stream.on('error', (err: Error & { code?: string }) => {
    if (err.code === NodeErrorCode.HTTP2_STREAM_ERROR) peerReset = true;
  });
  return () => clientResetCode(stream, session, peerReset);
}

export function clientResetCode(stream: http2.ServerHttp2Stream, session: http2.Http2Session | undefined, peerReset: boolean): number {
  const code = stream.rstCode;
  if (code === Http2Error.CANCEL || peerReset) return code ?? Http2Error.CANCEL;
  if (session === undefined || session.destroyed) return CONNECTION_CLOSED;
  return code ?? Http2Error.CANCEL;
}
