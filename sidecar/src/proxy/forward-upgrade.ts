// HTTP/1.1 upgrades (WebSocket): the hand-shake goes to the upstream as it came,
// then the two sockets are joined byte for byte until either side closes. The
// upstream connection is its own (an upgraded socket cannot go back to a pool),
// verified with --upstream-ca, bounded by --connect-timeout, and counted as an
// upstream connection like the pools' ones.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { CONNECTION_CLOSED } from '../protocol/vocabulary.ts';
import type { ConnectionRecord } from '../observe/observer.ts';
import { detect } from '../protocol/detect.ts';
import { now } from '../clock.ts';
import { Call } from './call.ts';
import type { ProxyContext } from './context.ts';
import { filterRawHeaders } from './hop-by-hop.ts';
import { nodeTls } from '../builtins.ts';

/** The --upstream-ca bundle, read once on the first upgrade to an https:// upstream. */
const caFiles = new Map<string, Buffer>();
function caOf(file: string | undefined): Buffer | undefined {
  if (file === undefined) return undefined;
  let ca = caFiles.get(file);
  if (!ca) caFiles.set(file, (ca = readFileSync(file)));
  return ca;
}

export function forwardUpgrade(ctx: ProxyContext, conn: ConnectionRecord, req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
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

  const upstream = target.tls
    ? nodeTls().connect({ host: target.host, port: target.port, servername: net.isIP(target.host) ? undefined : target.host, ALPNProtocols: ['http/1.1'], ca: caOf(ctx.config.upstreamCa) })
    : net.connect(target.port, target.host);
  call.sent(target.authority);
  const upConn: ConnectionRecord = { id: ctx.nextConnId(), side: 'upstream', httpVersion: '1.1', peer: target.authority, openTime: now(), closeTime: 0, calls: 1, active: 1 };
  const connectTimer = setTimeout(() => {
    upstream.destroy(Object.assign(new Error(`connect timeout after ${ctx.config.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' }));
  }, ctx.config.connectTimeoutMs);
  upstream.once('close', () => {
    clearTimeout(connectTimer);
    if (!connected) return;
    upConn.active = 0;
    upConn.closeTime = now();
    ctx.observer.connectionClosed(upConn);
  });
  let connected = false;
  let switched = false;
  let closer: 'client' | 'upstream' | undefined;

  upstream.once(target.tls ? 'secureConnect' : 'connect', () => {
    clearTimeout(connectTimer);
    connected = true;
    ctx.observer.connectionOpened(upConn);
    const raw = filterRawHeaders(req.rawHeaders, true);
    let text = `${method} ${url} HTTP/1.1\r\n`;
    for (let i = 0; i < raw.length; i += 2) text += `${raw[i]}: ${raw[i + 1]}\r\n`;
    upstream.write(text + '\r\n');
    if (head.length) {
      tap.requestData(head);
      upstream.write(head);
    }
    socket.pipe(upstream);
  });
  upstream.once('data', (chunk: Buffer) => {
    record.upstreamHeadersTime = now();
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(chunk.subarray(0, 16).toString('latin1'));
    const status = m ? Number(m[1]) : 502;
    tap.responseHeaders(status, {});
    switched = status === 101;
  });
  socket.on('data', (chunk: Buffer) => tap.requestData(chunk));
  upstream.on('data', (chunk: Buffer) => tap.responseData(chunk));
  upstream.pipe(socket);

  upstream.on('error', (err: Error & { code?: string }) => {
    if (connected) return;
    record.upstreamUnreachable = true;
    tap.responseHeaders(503, {});
    socket.end(`HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: 0\r\nx-rpcscope-error: ${err.code ?? 'connect failed'}\r\n\r\n`);
  });
  socket.on('close', () => {
    closer ??= 'client';
    upstream.destroy();
  });
  upstream.on('close', () => {
    closer ??= 'upstream';
    record.upstreamEndTime = now();
    socket.end();
  });
  // A WebSocket ends when either side closes: that is its normal end, not a reset.
  // A hand-shake cut before the upstream answered is.
  const finish = (): void => {
    if (switched || record.httpStatus !== 0) call.end();
    else call.end({ side: closer ?? 'client', code: CONNECTION_CLOSED });
  };
  socket.once('close', finish);
  upstream.once('close', () => setImmediate(finish));
}
