// Which HTTP a cleartext connection speaks, from its first bytes: HTTP/2 with
// prior knowledge opens with the connection preface (RFC 9113 §3.4), which no
// HTTP/1.1 request line can start with.
import type { Socket } from 'node:net';

export const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/**
 * The preface's first line: no HTTP/1.x request has version 2.0, so bytes that
 * start with it and then leave the preface are an HTTP/2 client's invalid
 * preface (RFC 9113 §3.4), not an HTTP/1.1 request to answer 400.
 */
const H2_PREFACE_LINE = 16;

/**
 * Reads just enough of the socket to decide, puts the bytes back, and calls
 * `decide` once with the socket paused. A socket that closes first is dropped;
 * one that has not let us decide within `timeoutMs` (0: no limit) — silent, or
 * sending the preface a byte at a time — is destroyed and `timedOut` called.
 * Given `wrongPreface`, bytes that start as the preface's first line and then
 * leave it go there instead of to `decide(false)`.
 */
export function sniffHttpVersion(socket: Socket, decide: (h2: boolean) => void, timeoutMs = 0, timedOut: () => void = () => {}, wrongPreface?: () => void): void {
  let seen: Buffer = Buffer.alloc(0);
  // A client that resets before we decide only goes away; unheard, its error would end the process.
  socket.on('error', () => {});
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          socket.removeListener('data', onData);
          socket.destroy();
          timedOut();
        }, timeoutMs)
      : undefined;
  const onData = (chunk: Buffer): void => {
    seen = seen.length ? Buffer.concat([seen, chunk]) : chunk;
    const n = Math.min(seen.length, H2_PREFACE.length);
    const prefixMatches = seen.compare(H2_PREFACE, 0, n, 0, n) === 0;
    if (prefixMatches && n < H2_PREFACE.length) return;
    clearTimeout(timer);
    socket.removeListener('data', onData);
    socket.pause();
    socket.unshift(seen);
    if (!prefixMatches && wrongPreface && n > H2_PREFACE_LINE && seen.compare(H2_PREFACE, 0, H2_PREFACE_LINE, 0, H2_PREFACE_LINE) === 0) return wrongPreface();
    decide(prefixMatches);
  };
  socket.on('data', onData);
  if (timer) socket.once('close', () => clearTimeout(timer));
}
