// The upstream connection an HTTP/1.1 request went out on, counted once the
// request reaches the upstream: at once on a reused keep-alive socket, when it
// connects on a new one (which is also when the upstream's part of the call starts).
import type http from 'node:http';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { CallRecord } from '../call/call-record.ts';
import { now } from '../clock.ts';
import { H1AgentPool } from './h1-agent-pool.ts';

export interface UpstreamSocketState {
  /** The request reached a connected socket; an error before then means the upstream is unreachable. */
  opened: boolean;
}

export function countUpstreamSocket(req: http.ClientRequest, target: UpstreamUrl, record: CallRecord): UpstreamSocketState {
  const state: UpstreamSocketState = { opened: false };
  req.on('socket', (socket) => {
    const upConn = H1AgentPool.connectionOf(socket);
    if (!upConn) return;
    const counted = (): void => {
      state.opened = true;
      upConn.calls++;
      upConn.active++;
      req.once('close', () => upConn.active--);
    };
    if (socket.readyState === 'open' && !socket.connecting) counted();
    else
      socket.once(target.tls ? 'secureConnect' : 'connect', () => {
        record.upstreamStartTime = now();
        counted();
      });
  });
  return state;
}
