// Rewriting a frame in place, in the piece of bytes being read, before it goes
// on. The relay drops no frame and moves no byte (relay-connection.ts); where a
// frame must not reach its receiver as sent — the upstream's graceful GOAWAY or
// its reset of a call answered elsewhere, a client WINDOW_UPDATE that repays the
// relay's own DATA (client-writer.ts) — it is rewritten where it lies, every
// byte in place. A frame only partly in the piece has partly gone on already,
// and is left as it is.
import { FRAME_HEADER_LENGTH } from '../h2/frame-types.ts';

/**
 * A frame type no one has registered, in the experimental range (RFC 9113 §11.2,
 * 0xf0-0xff): a frame turned into it in place is ignored by its receiver (§5.5).
 */
const IGNORED_TYPE = 0xfe;

/** Whether the frame whose payload `payload` views lies whole in `piece`, not yet gone on. */
export function inPiece(payload: Buffer, piece: Buffer | undefined): piece is Buffer {
  if (!piece || payload.buffer !== piece.buffer) return false;
  return payload.byteOffset - FRAME_HEADER_LENGTH >= piece.byteOffset && payload.byteOffset + payload.length <= piece.byteOffset + piece.length;
}

/**
 * Turns the frame whose payload `payload` views, if still in `piece`, into a
 * frame of a type no one uses, which its receiver ignores (RFC 9113 §5.5): the
 * one way to take a frame out of a relayed stream without moving a byte.
 */
export function voidFrame(payload: Buffer, piece: Buffer | undefined): boolean {
  if (!inPiece(payload, piece)) return false;
  const at = payload.byteOffset - FRAME_HEADER_LENGTH - piece.byteOffset;
  piece[at + 3] = IGNORED_TYPE;
  piece[at + 4] = 0;
  return true;
}
