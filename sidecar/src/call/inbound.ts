// A call as it arrived from its caller: its record opened, what it is, and its
// request line, read once whichever forwarder then carries it.
import type { Detected } from '../protocol/detect.ts';
import type { Call } from './call.ts';

export interface Inbound {
  readonly call: Call;
  readonly detected: Detected;
  readonly method: string;
  /** The request target as received: path and query. */
  readonly path: string;
  readonly contentType: string | undefined;
  /** The request's fields as received, [name, value, ...]: repeated ones stay apart. */
  readonly rawHeaders: readonly string[] | undefined;
}
