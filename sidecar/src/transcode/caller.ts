// The caller of a translated call, HTTP/1.1 or HTTP/2, behind one small face:
// the translating forwarders read a whole request body, answer with headers,
// write, end — and hear once whether the caller got the whole answer or left.
import type http from 'node:http';
import type http2 from 'node:http2';
import { Http2Error } from '../protocol/reset-codes.ts';
import { ErrorCode, RpcscopeError } from '../core/errors.ts';

export interface Caller {
  readonly headers: http.IncomingHttpHeaders;
  /** The whole request body; rejects when it exceeds `limit` bytes or the caller leaves. */
  readBody(limit: number, onChunk: (chunk: Buffer) => void): Promise<Buffer>;
  /** Streams the request body chunk by chunk. */
  onBody(onChunk: (chunk: Buffer) => void, onEnd: () => void): void;
  respond(status: number, headers: Record<string, string | string[]>): void;
  /** False when the caller's buffer is full: wait for `onDrain`. */
  write(chunk: Buffer | string): boolean;
  onDrain(cb: () => void): void;
  end(chunk?: Buffer | string): void;
  readonly headersSent: boolean;
  /** Once: `finished` when the whole response went out, else the caller left (with its reset code on HTTP/2). */
  onDone(cb: (finished: boolean, resetCode: number | undefined) => void): void;
  /** Cut the response short. */
  abort(): void;
}


function collect(source: NodeJS.ReadableStream & { destroy(): void }, limit: number, onChunk: (chunk: Buffer) => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    source.on('data', (chunk: Buffer) => {
      onChunk(chunk);
      size += chunk.length;
      if (size > limit) {
        source.removeAllListeners('data');
        source.resume();
        reject(new RpcscopeError(ErrorCode.BODY_TOO_LARGE, `request body over ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    source.on('end', () => resolve(Buffer.concat(chunks)));
    source.on('error', reject);
    source.on('close', () => reject(new Error('caller left')));
  });
}

export function h1Caller(req: http.IncomingMessage, res: http.ServerResponse): Caller {
  res.sendDate = false;
  return {
    headers: req.headers,
    readBody: (limit, onChunk) => collect(req, limit, onChunk),
    onBody(onChunk, onEnd) {
      req.on('data', onChunk);
      req.on('end', onEnd);
    },
    respond(status, headers) {
      res.writeHead(status, headers);
      res.flushHeaders();
    },
    write: (chunk) => res.write(chunk),
    onDrain: (cb) => res.once('drain', cb),
    end: (chunk) => (chunk === undefined ? res.end() : res.end(chunk)),
    get headersSent() {
      return res.headersSent;
    },
    onDone(cb) {
      res.once('close', () => cb(res.writableFinished, undefined));
    },
    abort: () => res.destroy(),
  };
}

export function h2Caller(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): Caller {
  let ended = false;
  return {
    headers: headers as http.IncomingHttpHeaders,
    readBody: (limit, onChunk) => collect(stream, limit, onChunk),
    onBody(onChunk, onEnd) {
      stream.on('data', onChunk);
      stream.on('end', onEnd);
    },
    respond(status, out) {
      if (stream.destroyed) return;
      stream.respond({ ...out, ':status': status });
    },
    write: (chunk) => stream.destroyed || stream.write(chunk),
    onDrain: (cb) => stream.once('drain', cb),
    end(chunk) {
      ended = true;
      if (stream.destroyed) return;
      if (chunk === undefined) stream.end();
      else stream.end(chunk);
    },
    get headersSent() {
      return stream.headersSent;
    },
    onDone(cb) {
      stream.once('close', () => cb(ended && stream.rstCode === Http2Error.NO_ERROR, stream.rstCode));
    },
    abort: () => stream.close(Http2Error.INTERNAL_ERROR),
  };
}
