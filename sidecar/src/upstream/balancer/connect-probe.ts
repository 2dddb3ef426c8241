// Whether an ejected endpoint answers again: a TCP connection to it is made
// within the connect timeout, then closed. A blackholed pod never completes the
// handshake; a restarted one refuses, then accepts. No call is risked on it.
import net from 'node:net';
import type { UpstreamUrl } from '../../config/parse-value.ts';

export function connectProbe(target: UpstreamUrl, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: target.host, port: target.port });
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
