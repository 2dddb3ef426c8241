// What goes toward the upstream: the client's bytes as they come, held while
// the upstream's connection is being made; the frames the relay adds itself
// (RST_STREAM for a stream it will not take), only at a frame boundary of the
// client's bytes; and, in translate mode, the client's header blocks written
// anew. Once the upstream's connection is gone, or never came, nothing more goes.
import type net from 'node:net';
import type { FrameParser } from './frame-parser.ts';
import { DEFAULT_MAX_FRAME_SIZE, Flag } from '../h2/frame-types.ts';
import { headerBlockFrames } from '../h2/frames.ts';
import type { HeaderList, HpackDecoder } from './hpack-decoder.ts';
import { encodeTableless, leadingSizeUpdates } from './hpack-literal-encoder.ts';

/** Client bytes held while the upstream connection is being made. */
const MAX_PENDING_BYTES = 4 * 1024 * 1024;

export class UpstreamWriter {
  /** The upstream's socket while the relay writes to it: from its connection's start until the relay leaves `open`. */
  private up: net.Socket | undefined;
  /** Bytes for the upstream while its connection is being made. */
  private pending: Buffer[] | undefined = [];
  private pendingBytes = 0;
  /** Frames of the relay's own waiting for the client's bytes to reach a frame boundary. */
  private added: Buffer[] = [];
  /** True while the client's bytes are being parsed, before they are passed on. */
  reading = false;
  /**
   * While one read of the client is processed (`batch`): its first write waits
   * here, and a second corks the socket, so that what the read leads to goes in
   * one write without the cost of corking a read that leads to one write only.
   */
  private held: Buffer | undefined;
  private batching = false;
  private corked = false;
  /** The upstream's SETTINGS_MAX_FRAME_SIZE: translate mode splits the blocks it writes to fit. */
  maxFrame = DEFAULT_MAX_FRAME_SIZE;

  /**
   * @param down the client's socket, whose reading waits while the upstream's is full
   * @param fromClient the client's frame reader, whose frame boundaries added frames wait for
   * @param requestHpack what decodes the client's header blocks, for translate mode to write them anew
   * @param translate translate mode (relay-connection.ts)
   */
  constructor(private readonly down: net.Socket, private readonly fromClient: FrameParser, private readonly requestHpack: HpackDecoder, private readonly translate: boolean) {}

  /** The upstream's connection is up: what was held goes first, in one write. */
  start(up: net.Socket): void {
    const pending = this.pending!;
    if (pending.length > 0) {
      up.cork();
      for (const b of pending) up.write(b);
      up.uncork();
    }
    this.pending = undefined;
    this.pendingBytes = 0;
    this.up = up;
  }

  /** The upstream's connection is gone, or will never be: what would go to it goes nowhere. */
  stop(): void {
    if (this.corked) this.up?.uncork();
    this.corked = false;
    this.held = undefined;
    this.up = undefined;
    this.pending = undefined;
  }

  /** One read of the client begins: what it leads to toward the upstream goes in one write, at `endBatch`. */
  batch(): void {
    this.batching = true;
  }

  endBatch(): void {
    this.batching = false;
    const { up, held } = this;
    this.held = undefined;
    if (this.corked) {
      this.corked = false;
      up?.uncork();
    } else if (up && held) this.writeNow(up, held);
  }

  /** Writes to the upstream (see `held`); reading waits on a full socket. */
  private write(up: net.Socket, bytes: Buffer): void {
    if (!this.batching) return this.writeNow(up, bytes);
    if (!this.held && !this.corked) {
      this.held = bytes;
      return;
    }
    if (!this.corked) {
      up.cork();
      this.corked = true;
      this.writeNow(up, this.held!);
      this.held = undefined;
    }
    this.writeNow(up, bytes);
  }

  private writeNow(up: net.Socket, bytes: Buffer): void {
    if (!up.write(bytes)) this.down.pause();
  }

  /** The client's bytes (translate mode: a run of its frames, or a block written anew), passed on; reading waits on a full socket. */
  pass(bytes: Buffer): void {
    if (this.up) this.write(this.up, bytes);
    else if (this.pending) {
      this.pending.push(bytes);
      this.pendingBytes += bytes.length;
      if (this.pendingBytes > MAX_PENDING_BYTES) this.down.pause();
    }
  }

  /**
   * Adds a frame at the next frame boundary of the client's bytes. While they are
   * being read, the frame that led here (a HEADERS the relay refuses) has not been
   * passed on yet: the reader writes the added frames after the bytes (`flush`), or
   * the upstream would read a RST_STREAM for a stream it never saw opened (an idle
   * stream: PROTOCOL_ERROR, RFC 9113 §5.1).
   */
  send(f: Buffer): void {
    this.added.push(f);
    if (!this.reading && this.fromClient.atBoundary) this.flush();
  }

  /** Adds a frame to go after the client's bytes being read now. */
  after(f: Buffer): void {
    this.added.push(f);
  }

  /** Writes the frames added, if any, once the client's bytes sit on a frame boundary. */
  flushAtBoundary(): void {
    if (this.added.length > 0 && this.fromClient.atBoundary) this.flush();
  }

  private flush(): void {
    const frames = this.added;
    this.added = [];
    if (this.up) {
      // Several frames go in one write.
      const { up } = this;
      const cork = !this.batching && frames.length > 1;
      if (cork) up.cork();
      for (const f of frames) this.write(up, f);
      if (cork) up.uncork();
    } else if (this.pending) this.pending.push(...frames);
  }

  /**
   * Translate mode: the client's header block, written anew toward the upstream
   * where the client's frames were, with `traceparent` in place of the caller's.
   * Its padding and the deprecated priority fields (RFC 9113 §5.3.2) are not kept.
   * A block whose list is over the size is never written anew (literals would
   * turn each 1-octet reference into the field it names, thousands of times the
   * block): it goes nowhere, and the upstream, whose table it never touches,
   * does not hear of it. Returns whether the upstream has the block.
   */
  rewrite(id: number, flags: number, block: Buffer, list: HeaderList, traceparent: string | undefined): boolean {
    if (!this.translate) return true;
    if (this.requestHpack.overflowed) return false;
    const encoded = encodeTableless(block.subarray(0, leadingSizeUpdates(block)), list, this.requestHpack.neverIndexed, traceparent === undefined ? undefined : ['traceparent', traceparent]);
    this.pass(headerBlockFrames(id, encoded, (flags & Flag.END_STREAM) !== 0, this.maxFrame));
    return true;
  }
}
