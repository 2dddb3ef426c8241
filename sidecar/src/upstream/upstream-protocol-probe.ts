// Whether an upstream endpoint speaks one HTTP version, asked once on a
// connection of its own, with the first bytes of that version:
//
//   asked     TLS (ALPN, RFC 7301)               cleartext
//   HTTP/2    offer h2 only: chosen -> yes       the connection preface (prior knowledge,
//                                                RFC 9113 §3.3): a SETTINGS frame back -> yes
//                                                (the server's first frame, §3.4); a status
//                                                line, other bytes or a close -> no
//   HTTP/1.1  offer http/1.1 only: chosen, or    not asked: yes until a call proves otherwise.
//            no ALPN at all -> yes; the          Only a real request tells a server that speaks
//            no_application_protocol alert -> no both from one that speaks HTTP/2 alone, and
//                                                the app would see it; so the first HTTP/1.1
//                                                call to an HTTP/2-only app fails (its answer
//                                                does not parse) and the next ones are
//                                                translated (UpstreamProtocols.notHttp1).
//
// A connection that cannot be made answers nothing (undefined): the call then
// finds the upstream unreachable the usual way, and the question stays open.
import net from 'node:net';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { HttpVersion } from '../protocol/vocabulary.ts';
import { nodeTls } from '../builtins.ts';
import { NodeErrorCode } from '../core/errors.ts';

export interface ProbeOptions {
  connectTimeoutMs: number;
  /** CA bundle for https:// upstreams (undefined: the system CAs). */
  ca: Buffer | undefined;
}

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
// Frame header (RFC 9113 §4.1): length (3), type (1), flags (1), stream id (4).
const FRAME_HEADER = 9;
const SETTINGS = 0x4;
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, SETTINGS, 0, 0, 0, 0, 0]);
// GOAWAY, last stream 0, NO_ERROR: the probe leaves the way a client that is done does.
const GOAWAY = Buffer.from([0, 0, 8, 0x7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);

/** An HTTP/2 server's first bytes: a SETTINGS frame (not an ACK) on stream 0. */
function isServerPreface(head: Buffer): boolean {
  return head[3] === SETTINGS && (head[4]! & 0x1) === 0 && head.readUInt32BE(5) === 0;
}

export function probeUpstreamSpeaks(target: UpstreamUrl, version: HttpVersion, opts: ProbeOptions): Promise<boolean | undefined> {
  if (target.tls) return probeAlpn(target, version === '2' ? 'h2' : 'http/1.1', opts);
  if (version === '1.1') return Promise.resolve(true);
  return probeCleartext(target, opts, Buffer.concat([PREFACE, EMPTY_SETTINGS]), FRAME_HEADER, isServerPreface, GOAWAY);
}

function probeAlpn(target: UpstreamUrl, protocol: 'h2' | 'http/1.1', opts: ProbeOptions): Promise<boolean | undefined> {
  return new Promise((resolve) => {
    const socket = nodeTls().connect({
      host: target.host,
      port: target.port,
      ca: opts.ca,
      // An IP address is no server name (RFC 6066 §3).
      ...(net.isIP(target.host) ? {} : { servername: target.host }),
      ALPNProtocols: [protocol],
    });
    const timer = setTimeout(() => socket.destroy(), opts.connectTimeoutMs);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      // A server without ALPN speaks HTTP/1.1: HTTP/2 over TLS is only ever negotiated.
      resolve(socket.alpnProtocol === protocol || (protocol === 'http/1.1' && !socket.alpnProtocol));
      socket.end();
    });
    socket.on('error', (err: Error & { code?: string }) => {
      // The server took the connection and refused the protocol (RFC 7301 §3.2).
      if (err.code === NodeErrorCode.TLS_NO_APPLICATION_PROTOCOL) resolve(false);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
  });
}

function probeCleartext(target: UpstreamUrl, opts: ProbeOptions, hello: Buffer, enough: number, isYes: (head: Buffer) => boolean, goodbye: Buffer | undefined): Promise<boolean | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: target.host, port: target.port });
    let connected = false;
    let done = false;
    let head: Buffer = Buffer.alloc(0);
    const decide = (result: boolean | undefined): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(result);
      if (result && goodbye) socket.end(goodbye);
      else socket.destroy();
    };
    // Connected but silent past the connect timeout: a server of the version asked
    // would have answered at once.
    const timer = setTimeout(() => decide(connected ? false : undefined), opts.connectTimeoutMs);
    socket.once('connect', () => {
      connected = true;
      socket.write(hello);
    });
    socket.on('data', (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      if (head.length >= enough) decide(isYes(head));
    });
    socket.on('error', () => {});
    // Closed before enough bytes came back: a server refusing what it was sent.
    socket.once('close', () => decide(connected ? false : undefined));
  });
}
