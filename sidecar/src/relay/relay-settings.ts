// The SETTINGS each end sends the other through the relay (RFC 9113 §6.5), and
// what the relay follows of them: the HPACK table sizes its two decoders are
// held to, the frame size and stream limit the client is held to, and the
// windows and table size the relay's own frames toward the client keep to. The
// frames pass on; only where no upstream keeps the connection does the relay
// acknowledge the client's itself, and until then it counts those the app has
// not acknowledged, for the answers it may yet give alone (local-endings.ts).
import { Flag, Setting } from '../h2/frame-types.ts';
import type { ClientWriter } from './client-writer.ts';
import type { ClientFrameBudget } from './frame-budget.ts';
import { settingValue, type FrameParser } from './frame-parser.ts';
import { SETTINGS_ACK } from '../h2/frames.ts';
import type { HpackDecoder } from './hpack-decoder.ts';
import type { Phase } from './relay-phase.ts';
import type { RelayStream } from './relay-stream.ts';
import type { UpstreamWriter } from './upstream-writer.ts';

/** The relay's parts that SETTINGS bound, and what it does when the client's open windows for held DATA. */
export interface SettingsParts {
  /** Decodes what the client encodes: bounded by the upstream's SETTINGS_HEADER_TABLE_SIZE. */
  requestHpack: HpackDecoder;
  /** Decodes what the upstream encodes: bounded by the client's. */
  responseHpack: HpackDecoder;
  fromClient: FrameParser;
  writer: ClientWriter;
  toUpstream: UpstreamWriter;
  frameBudget: ClientFrameBudget;
  streams: Map<number, RelayStream>;
  /** The client's new SETTINGS_INITIAL_WINDOW_SIZE may let held DATA go. */
  windowsMoved: () => void;
}

export class RelaySettings {
  /** Client SETTINGS not acknowledged: the relay acknowledges them itself when it answers locally. */
  private unacknowledged = 0;

  constructor(private readonly parts: SettingsParts) {}

  /** The client's SETTINGS (or their ACK), the connection in `phase`. */
  fromClient(flags: number, payload: Buffer, phase: Phase): void {
    const { writer } = this.parts;
    if (flags & Flag.ACK) return this.parts.frameBudget.settingsAcknowledged();
    if (phase === 'local') writer.write(SETTINGS_ACK);
    else if (phase === 'detached') writer.send(SETTINGS_ACK);
    else this.unacknowledged++;
    const initial = settingValue(payload, Setting.INITIAL_WINDOW_SIZE);
    if (initial !== undefined) {
      writer.initialWindowSize(initial, this.parts.streams.values());
      if (writer.holding) this.parts.windowsMoved();
    }
    const size = settingValue(payload, Setting.HEADER_TABLE_SIZE);
    if (size === undefined) return;
    this.parts.responseHpack.setLimit(size);
    writer.tableSize(size);
  }

  /** The upstream's SETTINGS (or their ACK). */
  fromUpstream(flags: number, payload: Buffer): void {
    if (flags & Flag.ACK) return;
    const { frameBudget, writer, toUpstream, fromClient } = this.parts;
    frameBudget.upstreamSettings(payload);
    writer.upstreamSpoke = true;
    const maxFrame = (toUpstream.maxFrame = settingValue(payload, Setting.MAX_FRAME_SIZE) ?? toUpstream.maxFrame);
    // A client may send frames up to the new size once it has read it, before its ACK reaches the app.
    fromClient.maxFrameSize = Math.max(fromClient.maxFrameSize, maxFrame);
    const size = settingValue(payload, Setting.HEADER_TABLE_SIZE);
    if (size !== undefined) this.parts.requestHpack.setLimit(size);
  }

  /** The client's SETTINGS the app never acknowledged, now the relay's to acknowledge: counted from none again. */
  takeUnacknowledged(): number {
    const n = this.unacknowledged;
    this.unacknowledged = 0;
    return n;
  }
}
