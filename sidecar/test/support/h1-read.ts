// Reads every request out of a byte stream with rpcscope's strict HTTP/1.1
// parser, as the HTTP/1.1 relay does: a head, then its body, then the next head.
import { BodyReader } from '../../src/h1/body-reader.ts';
import { HeadReader, parseRequestHead, type RequestHead } from '../../src/h1/message-head.ts';

/** The head limit the tests read with: Node's default --max-http-header-size. */
export const MAX = 16 * 1024;

export interface Read {
  head: RequestHead;
  /** The body's bytes as they passed, chunk framing included. */
  body: Buffer;
  /** Its payload: the data of its chunks, or the whole body. */
  payload: number;
}

/**
 * Reads every request out of `bytes`, fed in the pieces `cuts` makes, as the
 * relay will: a head, then its body, then the next head. Bodies are kept as
 * the bytes that passed (chunk framing included), since the relay forwards them as they came.
 */
export function readRequests(bytes: Buffer, cuts: number[] = []): Read[] {
  const heads = new HeadReader(MAX);
  const body = new BodyReader(MAX);
  const out: Read[] = [];
  let current: { head: RequestHead; parts: Buffer[] } | undefined;
  const edges = [0, ...cuts.filter((c) => c > 0 && c < bytes.length), bytes.length];
  for (let k = 0; k + 1 < edges.length; k++) {
    const chunk = bytes.subarray(edges[k], edges[k + 1]);
    let at = 0;
    while (at < chunk.length) {
      if (current === undefined) {
        const end = heads.read(chunk, at);
        if (end < 0) break;
        const head = parseRequestHead(heads.take());
        current = { head, parts: [] };
        body.begin(head.framing);
        at = end;
      }
      const end = body.read(chunk, at);
      current.parts.push(chunk.subarray(at, end));
      at = end;
      if (body.done) {
        out.push({ head: current.head, body: Buffer.concat(current.parts), payload: body.payload });
        current = undefined;
      }
    }
  }
  // A request without a body is done as soon as its head is.
  if (current !== undefined && body.done) out.push({ head: current.head, body: Buffer.concat(current.parts), payload: body.payload });
  return out;
}

