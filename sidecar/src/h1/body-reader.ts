// Follows an HTTP/1.1 body through the socket's chunks without changing it:
// the relay passes the body's bytes on as they arrive and needs only to know
// where the body ends (the next request or response starts there) and how many
// payload bytes it carried. Chunked framing is checked strictly (RFC 9112 §7.1):
// a chunk size the app's parser could read otherwise is refused, not passed on.
import { H1Error } from './h1-error.ts';
import { CHUNK_EXT, CR, FIELD_VALUE, hexValue, LF, SEMICOLON, TCHAR } from './h1-syntax.ts';
import type { BodyFraming } from './message-head.ts';

/** A chunk-size line's extensions past this many bytes are refused (llhttp and nginx cap them too). */
const MAX_CHUNK_EXT_BYTES = 4096;
/** 16 hex digits already exceed any length a body can have: more are refused, not wrapped. */
const MAX_SIZE_DIGITS = 15;

const enum State {
  /** Reading a chunk-size's hex digits. */
  Size,
  /** Past ';': a chunk extension, up to its CR. */
  Ext,
  /** The LF after a chunk-size line's CR. */
  SizeLF,
  /** Inside chunk data: `remaining` bytes to go. */
  Data,
  /** The CR after chunk data. */
  DataCR,
  /** The LF after chunk data. */
  DataLF,
  /** At the start of a trailer line, or of the empty line that ends the body. */
  TrailerStart,
  /** Inside a trailer field line. */
  Trailer,
  /** The LF of the empty line that ends the body. */
  EndLF,
  /** A length-delimited body: `remaining` bytes to go. */
  Length,
  /** A response read until the app closes the connection. */
  Close,
  Done,
}

export class BodyReader {
  private state = State.Done;
  private remaining = 0;
  private digits = 0;
  private extBytes = 0;
  private trailerBytes = 0;
  private trailerLine = '';
  /** Payload bytes (chunk data, or the whole body when not chunked) read so far. */
  payload = 0;
  /** Given each slice of payload as it is read (chunk data without its framing): what a relay observes of a body. */
  onPayload: ((slice: Buffer) => void) | undefined;

  /** The trailer section's limit: the head's, as Node's parser applies it. */
  constructor(private readonly maxTrailerBytes: number) {}

  /** Starts a new body framed as its head says. */
  begin(framing: BodyFraming): void {
    this.payload = 0;
    this.digits = 0;
    this.extBytes = 0;
    this.trailerBytes = 0;
    switch (framing.kind) {
      case 'none':
        this.state = State.Done;
        break;
      case 'length':
        this.state = framing.length > 0 ? State.Length : State.Done;
        this.remaining = framing.length;
        break;
      case 'chunked':
        this.state = State.Size;
        this.remaining = 0;
        break;
      case 'close':
        this.state = State.Close;
        break;
    }
  }

  /** Whether the body has ended (a close-delimited one ends only with the connection). */
  get done(): boolean {
    return this.state === State.Done;
  }

  /**
   * Whether a chunked body stands between two chunks (no byte of the next
   * chunk-size line read): a chunk added there, and the last chunk, end it whole.
   */
  get betweenChunks(): boolean {
    return this.state === State.Size && this.digits === 0;
  }

  /** Whether the body is one read until the app closes the connection: its end is that close. */
  get untilClose(): boolean {
    return this.state === State.Close;
  }

  /**
   * Reads body bytes from `chunk` at `from`: the index just past the last byte of
   * the body in this chunk (the body ended there when `done`). Throws H1Error.
   */
  read(chunk: Buffer, from: number): number {
    let at = from;
    const end = chunk.length;
    while (at < end) {
      switch (this.state) {
        case State.Done:
          return at;
        case State.Close: {
          this.payload += end - at;
          this.onPayload?.(chunk.subarray(at, end));
          return end;
        }
        case State.Length:
        case State.Data: {
          const n = Math.min(this.remaining, end - at);
          this.remaining -= n;
          this.payload += n;
          this.onPayload?.(chunk.subarray(at, at + n));
          at += n;
          if (this.remaining === 0) this.state = this.state === State.Length ? State.Done : State.DataCR;
          break;
        }
        case State.Size: {
          const b = chunk[at++]!;
          const v = hexValue(b);
          if (v >= 0) {
            if (++this.digits > MAX_SIZE_DIGITS) throw new H1Error('chunk_size', 'too many digits');
            this.remaining = this.remaining * 16 + v;
          } else if (this.digits === 0) throw new H1Error('chunk_size', 'no digits');
          else if (b === SEMICOLON) this.state = State.Ext;
          else if (b === CR) this.state = State.SizeLF;
          // Whitespace after the size (BWS before an extension) is where parsers disagree: refused.
          else throw new H1Error('chunk_size', `byte 0x${b.toString(16)} after the size`);
          break;
        }
        case State.Ext: {
          const b = chunk[at++]!;
          if (b === CR) this.state = State.SizeLF;
          else if (CHUNK_EXT[b] !== 1 || ++this.extBytes > MAX_CHUNK_EXT_BYTES) throw new H1Error('chunk_size', 'chunk extension');
          break;
        }
        case State.SizeLF: {
          if (chunk[at++] !== LF) throw new H1Error('bare_cr', 'in a chunk size line');
          this.digits = 0;
          this.extBytes = 0;
          if (this.remaining === 0) this.state = State.TrailerStart;
          else this.state = State.Data;
          break;
        }
        case State.DataCR:
          if (chunk[at++] !== CR) throw new H1Error('chunk_end');
          this.state = State.DataLF;
          break;
        case State.DataLF:
          if (chunk[at++] !== LF) throw new H1Error('chunk_end');
          this.state = State.Size;
          break;
        case State.TrailerStart: {
          const b = chunk[at++]!;
          this.countTrailer(1);
          if (b === CR) this.state = State.EndLF;
          else if (TCHAR[b] === 1) {
            this.trailerLine = String.fromCharCode(b);
            this.state = State.Trailer;
          } else throw new H1Error('trailer', 'a line starting with whitespace or a control byte');
          break;
        }
        case State.Trailer: {
          const b = chunk[at++]!;
          this.countTrailer(1);
          if (b === CR) {
            this.checkTrailerLine();
            this.state = State.SizeLF; // reused: the LF, then back to TrailerStart (remaining is 0)
          } else if (b === LF) throw new H1Error('bare_lf', 'in the trailer section');
          else if (this.trailerLine.indexOf(':') < 0 ? TCHAR[b] === 1 || b === 0x3a : FIELD_VALUE[b] === 1) this.trailerLine += String.fromCharCode(b);
          else throw new H1Error('trailer', 'a malformed field line');
          break;
        }
        case State.EndLF:
          if (chunk[at++] !== LF) throw new H1Error('bare_cr', 'at the end of the body');
          this.state = State.Done;
          return at;
      }
    }
    return at;
  }

  private countTrailer(n: number): void {
    this.trailerBytes += n;
    if (this.trailerBytes > this.maxTrailerBytes) throw new H1Error('trailer', `over ${this.maxTrailerBytes} bytes`);
  }

  private checkTrailerLine(): void {
    if (this.trailerLine.indexOf(':') < 1) throw new H1Error('trailer', 'a field line without a name and colon');
    this.trailerLine = '';
  }
}
