// A request body forwarded to the upstream as it arrives, with backpressure, and
// held (up to RETRY_BODY_LIMIT) until the response begins, so that an attempt
// the upstream refused unprocessed can be sent again whole on another stream.
// What pipe() would do, except that the destination can change.
import type { Readable, Writable } from 'node:stream';
import { RETRY_BODY_LIMIT } from '../upstream/upstream-retries.ts';

export class ReplayableBody {
  /** Every chunk so far, while the body may still be sent again; undefined once it may not. */
  private held: Buffer[] | undefined = [];
  private heldBytes = 0;
  private ended = false;
  private dest: Writable;

  constructor(private readonly src: Readable, first: Writable, onChunk: (chunk: Buffer) => void) {
    this.dest = first;
    src.on('data', (chunk: Buffer) => {
      onChunk(chunk);
      if (this.held) {
        this.heldBytes += chunk.length;
        if (this.heldBytes > RETRY_BODY_LIMIT) this.release();
        else this.held.push(chunk);
      }
      this.write(chunk);
    });
    src.on('end', () => {
      this.ended = true;
      if (!this.dest.destroyed) this.dest.end();
    });
  }

  /** The whole body so far is held: the call can be sent again. */
  get replayable(): boolean {
    return this.held !== undefined;
  }

  /** The response began (or the body outgrew the bound): nothing will be sent again. */
  release(): void {
    this.held = undefined;
    this.heldBytes = 0;
  }

  /** Send the body so far, and the rest as it comes, to `dest` instead. */
  resendTo(dest: Writable): void {
    this.dest = dest;
    for (const chunk of this.held ?? []) this.write(chunk);
    if (this.ended) dest.end();
    else if (!dest.writableNeedDrain) this.src.resume();
  }

  private write(chunk: Buffer): void {
    const d = this.dest;
    if (d.destroyed || d.writableEnded) return;
    if (d.write(chunk)) return;
    this.src.pause();
    d.once('drain', () => {
      if (this.dest === d) this.src.resume();
    });
  }
}
