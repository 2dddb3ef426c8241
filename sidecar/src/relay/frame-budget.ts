// What a relayed client connection may send before the relay cuts it. The
// relay passes every frame through, so a flood would reach the app and cost it
// (and the relay) work for nothing; the terminating path has nghttp2's limits
// and the listener's budgets (h2/control-frame-budget.ts), and the relay
// holds a client to the same, plus Envoy's inbound frame limits
// (config.core.v3.Http2ProtocolOptions, defaults below), answered with GOAWAY
// ENHANCE_YOUR_CALM, the code RFC 9113 §5.4.1 gives for a peer generating
// excessive load.
//
// | frames (RFC 9113 §6)             | the client may send                          | past it                 |
// | -------------------------------- | -------------------------------------------- | ----------------------- |
// | PING, not ACK (§6.7)             | 200 at once, then 50 a second                | `ping_flood`            |
// | SETTINGS, not ACK (§6.5)         | 50 at once, then 5 a second                  | `settings_flood`        |
// | WINDOW_UPDATE (§6.9)             | 5 + 2 × (streams opened + 10 × DATA frames   | `window_update_flood`   |
// |                                  | the client was sent) over the connection     |                         |
// |                                  | (Envoy: max_inbound_window_update_frames_    |                         |
// |                                  | per_data_frame_sent = 10)                    |                         |
// | PRIORITY (§6.3, deprecated)      | 100 × (1 + streams opened)                   | `priority_flood`        |
// |                                  | (Envoy: max_inbound_priority_frames_per_     |                         |
// |                                  | stream = 100)                                |                         |
// | DATA, HEADERS, CONTINUATION with | 1 in a row (Envoy: max_consecutive_inbound_  | `empty_frame_flood`     |
// | nothing but padding in them and  | frames_with_empty_payload = 1)               |                         |
// | no END_STREAM                    |                                              |                         |
// | CONTINUATION (§6.10)             | 8 in one header block (nghttp2's limit, so   | `continuation_flood`    |
// |                                  | no block the app would refuse gets through), |                         |
// |                                  | and the block within the relay's 256 KiB cap |                         |
// |                                  | (CVE-2024-27316)                             |                         |
//
// https://www.rfc-editor.org/rfc/rfc9113#section-6 ·
// https://www.envoyproxy.io/docs/envoy/latest/api-v3/config/core/v3/protocol.proto
//
// The budget reads only frame headers (and a padded frame's pad length), ahead
// of the relay's frame parser, so a flood is cut before any of it is passed on.
// Streams opened past the SETTINGS_MAX_CONCURRENT_STREAMS the client
// acknowledged (the app's, relayed to it) are counted here too (`stream_limit`),
// and the streams it resets before their answer (h2/reset-budget.ts,
// `reset_flood`).
import type { TerminationReason } from '../call/faults.ts';
import { CONTROL_FRAME_BUDGETS, ControlFrameBudget } from '../h2/control-frame-budget.ts';
import { MAX_HEADER_LIST_SIZE } from '../h2/header-list-size.ts';
import { ResetBudget } from '../h2/reset-budget.ts';
import { DEFAULT_MAX_HEADER_BLOCK, settingValue } from './frame-parser.ts';
import { CLIENT_PREFACE, FRAME_HEADER_LENGTH, Flag, FrameType, Setting } from '../h2/frame-types.ts';
import { dataFrame, headersFrame } from '../h2/frames.ts';

export const INBOUND_FRAME_LIMITS = {
  windowUpdatesPerDataFrameSent: 10,
  priorityFramesPerStream: 100,
  consecutiveEmptyFrames: 1,
  continuationsPerBlock: 8,
} as const;

export interface Flood {
  reason: TerminationReason;
  message: string;
}

const flood = (reason: TerminationReason, what: string): Flood => ({ reason, message: `client connection cut: ${what}` });
const PING_FLOOD = flood('ping_flood', 'PING frames sent faster than the budget');
const SETTINGS_FLOOD = flood('settings_flood', 'SETTINGS frames sent faster than the budget');
const WINDOW_UPDATE_FLOOD = flood('window_update_flood', 'more WINDOW_UPDATE frames than the DATA it was sent calls for');
const PRIORITY_FLOOD = flood('priority_flood', 'more PRIORITY frames than its streams call for');
const EMPTY_FRAME_FLOOD = flood('empty_frame_flood', 'DATA, HEADERS or CONTINUATION frames with nothing in them, in a row');
const CONTINUATION_FLOOD = flood('continuation_flood', 'a header block continued past the limit (CONTINUATION flood)');
export const STREAM_LIMIT = flood('stream_limit', 'streams opened past the concurrency limit it acknowledged');
export const RESET_FLOOD = flood('reset_flood', 'streams reset faster than the budget (rapid reset)');

export class ClientFrameBudget {
  private prefaceLeft = CLIENT_PREFACE.length;
  private readonly head = Buffer.alloc(FRAME_HEADER_LENGTH);
  private fill = 0;
  /** Payload bytes of the current frame still to pass. */
  private skip = 0;
  /** The current frame is padded: its first payload byte, the pad length, decides whether it is empty. */
  private padPending = false;
  private type = 0;
  private flags = 0;
  private length = 0;
  private readonly pings = new ControlFrameBudget(CONTROL_FRAME_BUDGETS.ping, Date.now);
  private readonly settings = new ControlFrameBudget(CONTROL_FRAME_BUDGETS.settings, Date.now);
  private windowUpdates = 0;
  private priorities = 0;
  private streamsOpened = 0;
  private lastStream = 0;
  private dataFramesSent = 0;
  private emptyInARow = 0;
  private continuations = 0;
  private blockBytes = 0;
  private tripped: Flood | undefined;
  /** SETTINGS_MAX_CONCURRENT_STREAMS values relayed to the client, waiting for its ACK (in order, §6.5.3). */
  private readonly unacknowledged: (number | undefined)[] = [];
  private streamLimit = Infinity;
  private refusedHeaderList = false;
  private readonly resets = new ResetBudget(Date.now);

  /** Reads the frame headers in the client's next bytes; the first flood found, if any (then every later call says so too). */
  read(chunk: Buffer): Flood | undefined {
    if (this.tripped) return this.tripped;
    let i = 0;
    const n = chunk.length;
    if (this.prefaceLeft > 0) {
      const take = Math.min(this.prefaceLeft, n);
      this.prefaceLeft -= take;
      i = take;
    }
    while (i < n) {
      if (this.skip > 0) {
        if (this.padPending) {
          this.padPending = false;
          this.counted(this.length - 1 - chunk[i]! - (this.type === FrameType.HEADERS && this.flags & Flag.PRIORITY ? 5 : 0));
          if (this.tripped) return this.tripped;
        }
        const take = Math.min(this.skip, n - i);
        this.skip -= take;
        i += take;
        continue;
      }
      if (this.fill === 0 && n - i >= FRAME_HEADER_LENGTH) {
        this.frame(chunk, i);
        i += FRAME_HEADER_LENGTH;
      } else {
        const take = Math.min(FRAME_HEADER_LENGTH - this.fill, n - i);
        chunk.copy(this.head, this.fill, i, i + take);
        this.fill += take;
        i += take;
        if (this.fill < FRAME_HEADER_LENGTH) break;
        this.fill = 0;
        this.frame(this.head, 0);
      }
      if (this.tripped) return this.tripped;
    }
    return undefined;
  }

  /** A DATA frame went to the client: each one earns it WINDOW_UPDATEs. */
  dataFrameSent(): void {
    this.dataFramesSent++;
  }

  /** The upstream's SETTINGS, on their way to the client. */
  upstreamSettings(payload: Buffer): void {
    this.unacknowledged.push(settingValue(payload, Setting.MAX_CONCURRENT_STREAMS));
  }

  /** The client acknowledged the oldest SETTINGS it was sent: from now on it is held to their stream limit. */
  settingsAcknowledged(): void {
    const limit = this.unacknowledged.shift();
    if (limit !== undefined) this.streamLimit = limit;
  }

  /** A header list was refused: true the first time on the connection, which is counted (and asked to go) once. */
  firstHeaderListRefused(): boolean {
    if (this.refusedHeaderList) return false;
    return (this.refusedHeaderList = true);
  }

  /** The stream limit the upstream advertised last, acknowledged by the client or not. */
  get advertisedStreamLimit(): number {
    return this.unacknowledged.at(-1) ?? this.streamLimit;
  }

  /** The client reset a stream before its answer, what a rapid-reset flood is made of: false past the budget. */
  streamReset(): boolean {
    return this.resets.spend();
  }

  /** A new stream, with `open` streams already open: whether it is past the limit the client acknowledged. */
  overStreamLimit(open: number): boolean {
    return open >= this.streamLimit;
  }

  private frame(h: Buffer, at: number): void {
    const length = (h[at]! << 16) | (h[at + 1]! << 8) | h[at + 2]!;
    const type = h[at + 3]!;
    const flags = h[at + 4]!;
    this.type = type;
    this.flags = flags;
    this.length = length;
    this.skip = length;
    switch (type) {
      case FrameType.DATA:
      case FrameType.HEADERS: {
        if (type === FrameType.HEADERS) {
          const id = h.readUInt32BE(at + 5) & 0x7fffffff;
          if (id > this.lastStream) {
            this.lastStream = id;
            this.streamsOpened++;
          }
          this.continuations = 0;
          this.blockBytes = length;
        }
        if (flags & Flag.PADDED && length > 0) this.padPending = true;
        else this.counted(length - (type === FrameType.HEADERS && flags & Flag.PRIORITY ? 5 : 0));
        return;
      }
      case FrameType.CONTINUATION:
        this.blockBytes += length;
        if (++this.continuations > INBOUND_FRAME_LIMITS.continuationsPerBlock || this.blockBytes > DEFAULT_MAX_HEADER_BLOCK) this.tripped = CONTINUATION_FLOOD;
        else this.counted(length);
        return;
      case FrameType.WINDOW_UPDATE:
        if (++this.windowUpdates > 5 + 2 * (this.streamsOpened + INBOUND_FRAME_LIMITS.windowUpdatesPerDataFrameSent * this.dataFramesSent)) this.tripped = WINDOW_UPDATE_FLOOD;
        return;
      case FrameType.PRIORITY:
        if (++this.priorities > INBOUND_FRAME_LIMITS.priorityFramesPerStream * (1 + this.streamsOpened)) this.tripped = PRIORITY_FLOOD;
        return;
      case FrameType.PING:
        if (!(flags & Flag.ACK) && !this.pings.spend()) this.tripped = PING_FLOOD;
        return;
      case FrameType.SETTINGS:
        if (!(flags & Flag.ACK) && !this.settings.spend()) this.tripped = SETTINGS_FLOOD;
        return;
    }
  }

  /** A DATA, HEADERS or CONTINUATION frame with `content` octets besides its padding and priority fields. */
  private counted(content: number): void {
    if (content > 0 || (this.type !== FrameType.CONTINUATION && this.flags & Flag.END_STREAM)) this.emptyInARow = 0;
    else if (++this.emptyInARow > INBOUND_FRAME_LIMITS.consecutiveEmptyFrames) this.tripped = EMPTY_FRAME_FLOOD;
  }
}

/** The 431 a request header list over the size is answered with, on either relay. */
export const REFUSAL_FIELDS: [string, string][] = [
  [':status', '431'],
  ['content-type', 'text/plain; charset=utf-8'],
];
export const REFUSAL_BODY = Buffer.from(`rpcscope: request header list over ${MAX_HEADER_LIST_SIZE} octets\n`);

/** The 431 answer's frames on stream `id`, its header block encoded when written (`encode`, which knows the client's table). */
export function headerListRefusal(id: number, encode: (fields: [string, string][]) => Buffer): [() => Buffer, Buffer] {
  return [() => headersFrame(id, encode(REFUSAL_FIELDS), false), dataFrame(id, REFUSAL_BODY, true)];
}
