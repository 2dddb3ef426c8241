// The calls open on one relayed connection, by stream id, and what the relay
// keeps of each: its request header list for the call's life and, while the
// call may be sent again (relay-detour.ts), its body — bounded per connection,
// as nghttp2 bounds a session's memory. A call ends here once, whoever ends it.
import type { ResetSide } from '../call/call-record.ts';
import type { StreamRefusalReason } from '../call/faults.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import { RETRY_BODY_LIMIT } from '../upstream/upstream-retries.ts';
import type { HeaderList } from './hpack-decoder.ts';
import type { RelayStream } from './relay-stream.ts';
import { ClientStreamStates } from './stream-states.ts';

/**
 * Streams relayed at once on one connection, whatever the app allows: the
 * terminating path's SETTINGS_MAX_CONCURRENT_STREAMS (listen/listener.ts). The
 * client was told the app's limit, not this one, so a stream past it is refused
 * (REFUSED_STREAM, which clients retry) rather than taken for a protocol error.
 */
export const MAX_STREAMS = 1000;
/**
 * Request header lists and held request bodies (kept while a call may be sent
 * again) one connection may have the relay keep, as nghttp2 bounds a session's
 * memory (Node's maxSessionMemory, 10 MB): a stream that would go past it is
 * refused (REFUSED_STREAM), and a body that would is no longer held (its call
 * is then not sent again).
 */
export const MAX_RETAINED_BYTES = 10 * 1024 * 1024;

/** How a call ended, when not whole. */
export type Reset = { side: ResetSide; code: number };

export class RelayCalls {
  readonly streams = new Map<number, RelayStream>();
  /** Header lists and held bodies of the calls open, against MAX_RETAINED_BYTES. */
  private retained = 0;

  /**
   * @param upConn the upstream connection's record, which counts the calls
   * @param idle the last call open ended
   */
  /** What is known of the client's streams around the open calls: the last it opened, those it skipped, those it ended. */
  readonly states = new ClientStreamStates();

  constructor(private readonly upConn: ConnectionRecord, private readonly idle: () => void) {}

  /** Why a new call whose header list is `headerBytes` octets is refused, if it is. */
  refusal(headerBytes: number): StreamRefusalReason | undefined {
    if (this.streams.size >= MAX_STREAMS) return 'stream_limit';
    if (this.retained + headerBytes > MAX_RETAINED_BYTES) return 'memory_budget';
    return undefined;
  }

  /** A new call on stream `id`: its decoded request is kept while it may be sent again. */
  add(id: number, stream: RelayStream, list: HeaderList, headerBytes: number): void {
    this.streams.set(id, stream);
    stream.headerBytes = headerBytes;
    this.retained += headerBytes;
    stream.request = list.slice();
    this.upConn.calls++;
    this.upConn.active++;
  }

  /** Request body: held while the call may be sent again, within RETRY_BODY_LIMIT and the connection's budget. */
  requestData(stream: RelayStream, chunk: Buffer): void {
    if (stream.body && (stream.bodyBytes + chunk.length > RETRY_BODY_LIMIT || this.retained + chunk.length > MAX_RETAINED_BYTES)) this.dropBody(stream);
    stream.bodyBytes += chunk.length;
    if (stream.body) {
      // The first chunk makes an array of one (most requests are one DATA frame), where a push would make room for 17.
      if (stream.body.length === 0) stream.body = [chunk];
      else stream.body.push(chunk);
      this.retained += chunk.length;
    }
  }

  /** A request body no longer held for sending again: its octets leave the connection's budget. */
  dropBody(stream: RelayStream): void {
    if (!stream.body) return;
    this.retained -= stream.bodyBytes;
    stream.body = undefined;
  }

  /** The response's END_STREAM: the call ends once the request side is over too, as the stream does. */
  responseComplete(id: number, stream: RelayStream): void {
    stream.responseEnd();
    if (stream.requestEnded) this.end(id, stream);
  }

  requestComplete(id: number, stream: RelayStream): void {
    stream.requestEnded = true;
    if (stream.responseEnded) this.end(id, stream);
  }

  /** Ends the call on stream `id`, if `stream` is still it; `reset`: how, when not whole. */
  end(id: number, stream: RelayStream, reset?: Reset): void {
    if (this.streams.get(id) !== stream) return;
    this.streams.delete(id);
    if (stream.requestEnded || reset?.side === 'client') this.states.clientEnded(id);
    this.retained -= stream.headerBytes + (stream.body ? stream.bodyBytes : 0);
    this.upConn.active--;
    const { detour } = stream;
    if (detour?.via) detour.ended(reset !== undefined);
    stream.call.end(reset);
    if (this.streams.size === 0) this.idle();
  }

  /** Ends every call still open with `reset`. */
  endAll(reset: Reset): void {
    for (const [id, stream] of this.streams) this.end(id, stream, reset);
  }

  /**
   * A call the relay answered itself on a connection that never reached its
   * upstream: over at once. What it kept stays counted, as the connection goes a
   * moment later.
   */
  answered(id: number, stream: RelayStream): void {
    this.streams.delete(id);
    this.upConn.active--;
    stream.call.end();
  }
}
