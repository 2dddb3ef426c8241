// The GOAWAY code a client is told when nghttp2 (Node's HTTP/2 core, on the
// terminating path) gives up on its session for a frame it sent, by nghttp2's
// error (nghttp2.h, nghttp2_error). Node ends every such session with
// INTERNAL_ERROR, which reads as the sidecar's own fault; RFC 9113 names the
// code of each, and the session's public destroy(error, code) sends it.
import { Http2Error } from '../protocol/reset-codes.ts';

export const GOAWAY_FOR_NGHTTP2_ERROR: ReadonlyMap<number, number> = new Map([
  // NGHTTP2_ERR_PROTO: a frame on an idle stream, PRIORITY on stream 0, a WINDOW_UPDATE of 0, a forbidden SETTINGS value (§5.1, §6.3, §6.9, §6.5.2).
  [-505, Http2Error.PROTOCOL_ERROR],
  // NGHTTP2_ERR_STREAM_CLOSED: DATA or HEADERS on a stream the client ended (§5.1 "closed").
  [-510, Http2Error.STREAM_CLOSED],
  // NGHTTP2_ERR_FRAME_SIZE_ERROR: a frame of the wrong length for its type (§4.2).
  [-522, Http2Error.FRAME_SIZE_ERROR],
  // NGHTTP2_ERR_HEADER_COMP: a header block that does not decode (§4.3).
  [-523, Http2Error.COMPRESSION_ERROR],
  // NGHTTP2_ERR_FLOW_CONTROL: a window raised past 2^31-1 (§6.9.1), a SETTINGS_INITIAL_WINDOW_SIZE past it (§6.5.2).
  [-524, Http2Error.FLOW_CONTROL_ERROR],
]);
