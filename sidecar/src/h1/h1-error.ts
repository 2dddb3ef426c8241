// What the strict HTTP/1.1 parser refuses, each with the status a request is
// answered with and a stable reason a log line and a counter can carry. A
// refused request is answered and never forwarded; a refused response ends the
// call with 502 (the app's bytes cannot be relayed as the client would read them).
import { ErrorCode, RpcscopeError } from '../core/errors.ts';

/** reason -> [status, what is wrong], RFC 9112 sections in the comments. */
export const H1_REFUSALS = {
  /** §2.2: a line must end in CRLF; a bare LF is read as a line end by some parsers and not by others. */
  bare_lf: [400, 'a line ends in LF without CR'],
  /** §2.2: a CR not followed by LF. */
  bare_cr: [400, 'a CR not followed by LF'],
  /** The head (start line and fields) is over the parser's limit. */
  head_too_large: [431, 'the head is over the size limit'],
  /** §3: method SP request-target SP HTTP-version. */
  request_line: [400, 'a malformed request line'],
  /** §3.2.2: absolute-form is for proxies; the sidecar forwards to its one app. */
  absolute_form: [400, 'an absolute-form request target'],
  /** §3.2.3: authority-form is CONNECT's, and the sidecar opens no tunnels. */
  connect: [405, 'CONNECT is not served'],
  /** §2.3: only HTTP/1.0 and HTTP/1.1 are read here. */
  version: [505, 'an HTTP version other than 1.0 or 1.1'],
  /** §3.2: an HTTP/1.1 request carries exactly one Host. */
  host: [400, 'no Host, or more than one'],
  /** §5.2: obs-fold (a line starting with SP or HTAB) in a request. */
  obs_fold: [400, 'a folded header line (obs-fold)'],
  /** §5.1: a field name is a token, with no whitespace before its colon. */
  field_name: [400, 'a malformed field name'],
  /** RFC 9110 §5.5: a control byte in a field value. */
  field_value: [400, 'a control byte in a field value'],
  /** §6.1: Content-Length beside Transfer-Encoding. */
  cl_and_te: [400, 'Content-Length with Transfer-Encoding'],
  /** §6.3: a Content-Length that is not one decimal number, or more than one Content-Length. */
  content_length: [400, 'an invalid or repeated Content-Length'],
  /** §6.1, §6.3: a request's transfer codings must end in chunked, once, and HTTP/1.0 has none. */
  transfer_encoding: [400, 'a Transfer-Encoding that does not end in chunked'],
  /** §7.1: chunk-size is hex digits, then extensions, then CRLF. */
  chunk_size: [400, 'a malformed chunk size'],
  /** §7.1: chunk data is followed by CRLF. */
  chunk_end: [400, 'chunk data not followed by CRLF'],
  /** §7.1.2: the trailer section's fields. */
  trailer: [400, 'a malformed or oversized trailer section'],
  /** §4: HTTP-version SP status-code SP [reason-phrase]. */
  status_line: [502, 'a malformed status line'],
} as const satisfies Record<string, readonly [number, string]>;

export type H1Reason = keyof typeof H1_REFUSALS;

export class H1Error extends RpcscopeError {
  /** The status a refused request is answered with. */
  readonly status: number;

  constructor(readonly reason: H1Reason, detail?: string) {
    const [status, text] = H1_REFUSALS[reason];
    super(ErrorCode.H1_MESSAGE, detail === undefined ? text : `${text}: ${detail}`);
    this.name = 'H1Error';
    this.status = status;
  }
}
