// HTTP/1.1 upgrades (WebSocket): the hand-shake goes to the upstream as it came,
// and only once the upstream answers 101 Switching Protocols are the two sockets
// joined byte for byte until either side closes. Any other answer is relayed as
// an ordinary response and the connection closed. The upstream connection is its
// own (an upgraded socket cannot go back to a pool), verified with --upstream-ca,
// bounded by --connect-timeout, and counted as an upstream connection like the
// pools' ones.
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { CONNECTION_CLOSED } from '../protocol/vocabulary.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import { detect } from '../protocol/detect.ts';
import { now } from '../clock.ts';
import { Call } from '../call/call.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { filterRawHeaders } from '../protocol/hop-by-hop.ts';
import { nodeHttps } from '../builtins.ts';
import { connectTimeout } from '../core/errors.ts';

/**
 * Client bytes held while the upstream has not answered, past which the client is
 * no longer read: a WebSocket client sends nothing before its 101, so this is room
 * for a client that writes its first frames at once, not for a body.
 */
const HOLD_LIMIT = 64 * 1024;
/** After a refused upgrade's answer, how long the client has to read it and close before its socket is destroyed. */
const REFUSED_LINGER_MS = 1000;

/** Raw field pairs ([name, value, ...]) as HTTP/1.1 field lines. */
function fieldLines(raw: readonly string[]): string {
  let text = '';
  for (let i = 0; i < raw.length; i += 2) text += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return text;
}

/** A status line and raw header pairs as HTTP/1.1 text, up to and including the blank line. */
function head(status: number, message: string | undefined, raw: readonly string[], extra = ''): string {
  return `HTTP/1.1 ${status} ${message ?? ''}\r\n${fieldLines(raw)}${extra}\r\n`;
}

export function forwardUpgrade(ctx: ProxyContext, conn: ConnectionRecord, req: http.IncomingMessage, socket: Duplex, requestHead: Buffer): void {
  const method = req.method ?? 'GET';
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const call = new Call(ctx, conn, detect(method, req.headers['content-type'], undefined, ''), '1.1', method, q < 0 ? url : url.slice(0, q), req.headers);
  const { record, tap, target } = call;
  socket.on('error', () => {});
  if (!target) {
    record.upstreamUnreachable = true;
    tap.responseHeaders(503, {});
    socket.end('HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    call.end();
    return;
  }

  // Connection and Upgrade go on; Transfer-Encoding, hop-by-hop, does not. A body
  // of declared length goes to the upstream before its answer, as a body; a chunked
  // one is never sent as a body (Node's server hands the upgrade over without
  // reading it), so the upstream sees a request without one, and those bytes are held
  // with whatever else the client sent: they reach the upstream only if it switches
  // protocols, and then as bytes of the new protocol, never as HTTP/1.1.
  const upReq = (target.tls ? nodeHttps() : http).request({
    host: target.host,
    port: target.port,
    method,
    path: url,
    headers: filterRawHeaders(req.rawHeaders, true),
    setHost: false,
    agent: false,
    ...(target.tls ? { servername: net.isIP(target.host) ? undefined : target.host, ALPNProtocols: ['http/1.1'], ca: ctx.upstreamCa } : {}),
  });
  call.sent(target.authority);
  const upConn: ConnectionRecord = { id: ctx.nextConnId(), side: 'upstream', httpVersion: '1.1', peer: target.authority, openTime: now(), closeTime: 0, calls: 1, active: 1 };
  let connected = false;
  let switched = false;
  /** A refused upgrade's answer was relayed whole. */
  let answered = false;
  let closer: 'client' | 'upstream' | undefined;
  const connectTimer = setTimeout(() => {
    upReq.destroy(connectTimeout(ctx.config.connectTimeoutMs));
  }, ctx.config.connectTimeoutMs);
  upReq.on('socket', (upstream: net.Socket) => {
    upstream.once(target.tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(connectTimer);
      connected = true;
      ctx.observer.connectionOpened(upConn);
    });
    upstream.once('close', () => {
      clearTimeout(connectTimer);
      closer ??= 'upstream';
      record.upstreamEndTime ||= now();
      // Closed before any answer, or a tunnel the upstream ended: the client's side goes too.
      if (!answered) socket.end();
      if (!connected) return;
      upConn.active = 0;
      upConn.closeTime = now();
      ctx.observer.connectionClosed(upConn);
    });
  });

  // The client's bytes until the upstream has answered: the declared body goes on,
  // the rest is held.
  let bodyLeft = Number(req.headers['content-length'] ?? 0) || 0;
  const held: Buffer[] = [];
  let heldBytes = 0;
  const fromClient = (chunk: Buffer): void => {
    if (bodyLeft > 0) {
      const part = chunk.subarray(0, bodyLeft);
      bodyLeft -= part.length;
      tap.requestData(part);
      if (!upReq.write(part)) {
        socket.pause();
        upReq.once('drain', () => socket.resume());
      }
      if (bodyLeft === 0) upReq.end();
      chunk = chunk.subarray(part.length);
    }
    if (chunk.length === 0) return;
    held.push(chunk);
    heldBytes += chunk.length;
    if (heldBytes > HOLD_LIMIT) socket.pause();
  };
  socket.on('data', fromClient);
  if (requestHead.length) fromClient(requestHead);
  if (bodyLeft === 0) upReq.end();

  upReq.on('information', (info: http.InformationEvent) => {
    // A 100 Continue or 103 Early Hints before the answer: the client may read it too.
    // A 101 that names no protocol to switch to switches nothing (Node reads on for
    // the answer, and the bytes that follow fail to parse): the client is not told it did.
    if (info.statusCode === 101) return;
    socket.write(head(info.statusCode, info.statusMessage, filterRawHeaders(info.rawHeaders)));
  });

  upReq.on('upgrade', (res: http.IncomingMessage, upstream: net.Socket, upHead: Buffer) => {
    record.upstreamHeadersTime = now();
    switched = true;
    bodyLeft = 0;
    tap.responseHeaders(101, res.headers);
    upstream.on('error', () => {});
    socket.write(head(101, res.statusMessage, filterRawHeaders(res.rawHeaders, true)));
    if (upHead.length) {
      tap.responseData(upHead);
      socket.write(upHead);
    }
    // The protocol is switched: what the client sent meanwhile is the new protocol's.
    socket.off('data', fromClient);
    for (const chunk of held.splice(0)) {
      tap.requestData(chunk);
      upstream.write(chunk);
    }
    socket.on('data', (chunk: Buffer) => tap.requestData(chunk));
    upstream.on('data', (chunk: Buffer) => tap.responseData(chunk));
    socket.pipe(upstream);
    upstream.pipe(socket);
    socket.on('close', () => upstream.destroy());
  });

  upReq.on('response', (upRes: http.IncomingMessage) => {
    // Refused (or answered without switching): relayed as a response, and then the
    // connection is closed rather than read on. Node's server handed the socket
    // over on 'upgrade' and no longer parses it, and what the client sends next was
    // written for whichever protocol it expected: forwarding those bytes would take
    // them past the parser that refuses smuggling shapes and past the count, and
    // parsing them here again would be a second HTTP/1.1 server. A client told
    // `connection: close` reconnects, as after any closing answer.
    record.upstreamHeadersTime = now();
    const status = upRes.statusCode ?? 502;
    tap.responseHeaders(status, upRes.headers);
    socket.off('data', fromClient);
    held.length = 0;
    // Read on and drop, so that the client's close is seen.
    socket.resume();
    const raw = filterRawHeaders(upRes.rawHeaders);
    const bodiless = method === 'HEAD' || status === 204 || status === 304;
    // A body of unknown length (chunked, or to the upstream's close) goes chunked, so
    // that an upstream lost mid-body reaches the client as a truncated body.
    const chunked = !bodiless && upRes.headers['content-length'] === undefined;
    socket.write(head(status, upRes.statusMessage, raw, `${chunked ? 'transfer-encoding: chunked\r\n' : ''}connection: close\r\n`));
    upRes.on('data', (chunk: Buffer) => {
      tap.responseData(chunk);
      const more = chunked ? socket.write(`${chunk.length.toString(16)}\r\n`) && socket.write(chunk) && socket.write('\r\n') : socket.write(chunk);
      if (!more) {
        upRes.pause();
        socket.once('drain', () => upRes.resume());
      }
    });
    upRes.on('end', () => {
      record.upstreamEndTime = now();
      if (chunked) socket.write(`0\r\n${fieldLines(filterRawHeaders(upRes.rawTrailers))}\r\n`);
      answered = true;
      socket.end();
      upReq.destroy();
      call.end();
      setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
    });
    upRes.on('aborted', () => {
      // The upstream closed mid-answer: the client must not take a truncated body for a whole one.
      closer ??= 'upstream';
      socket.destroy();
    });
    upRes.on('error', () => {});
  });

  upReq.on('error', (err: Error & { code?: string }) => {
    if (connected || switched) return;
    record.upstreamUnreachable = true;
    tap.responseHeaders(503, {});
    socket.end(`HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: 0\r\nx-rpcscope-error: ${err.code ?? 'connect failed'}\r\n\r\n`);
  });
  socket.on('close', () => {
    closer ??= 'client';
    if (!switched) upReq.destroy();
  });
  // A WebSocket ends when either side closes: that is its normal end, not a reset.
  // A hand-shake cut before the upstream answered is, and so is a refused upgrade's
  // answer cut short.
  const finish = (): void => {
    if (switched || record.upstreamUnreachable || answered) call.end();
    else call.end({ side: closer ?? 'client', code: CONNECTION_CLOSED });
  };
  socket.once('close', finish);
  upReq.once('close', () => setImmediate(() => switched || finish()));
}
