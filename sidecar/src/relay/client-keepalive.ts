// The relay's PING keepalive toward the client (h2/h2-keepalive.ts): it PINGs
// the client when it has sent nothing for --keepalive-interval, and ends the
// connection when it answers nothing within --keepalive-timeout: a client that
// vanished without FIN or RST would otherwise hold its calls open, and the
// app's, for ever. The relay's own PINGs go at frame boundaries like any frame
// it adds (client-writer.ts), and their ACKs stop at the connection (the app
// never sent those PINGs).
import type net from 'node:net';
import type { Config } from '../config/load.ts';
import { FrameType } from '../h2/frame-types.ts';
import { frame } from '../h2/frames.ts';
import { H2Keepalive } from '../h2/h2-keepalive.ts';
import type { ClientWriter } from './client-writer.ts';
import type { Phase } from './relay-phase.ts';

/** What the keepalive reads of the connection it keeps (relay-connection.ts), and tells it. */
export interface KeepaliveHost {
  readonly phase: Phase;
  /** The client answered no PING in time: gone without FIN or RST. */
  clientVanished(): void;
}

/** The keepalive of the client's connection `down`, not yet started. */
export function clientKeepalive(config: Pick<Config, 'keepaliveIntervalMs' | 'keepaliveTimeoutMs'>, down: net.Socket, writer: ClientWriter, host: KeepaliveHost): H2Keepalive {
  return new H2Keepalive(
    { intervalMs: config.keepaliveIntervalMs, timeoutMs: config.keepaliveTimeoutMs },
    {
      // Where a PING may be added; none while the relay answers locally or is closing.
      send: (opaque) => {
        if (host.phase !== 'open' && host.phase !== 'detached') return false;
        writer.send(frame(FrameType.PING, 0, 0, opaque));
        return true;
      },
      bytesRead: () => down.bytesRead,
      timedOut: () => host.clientVanished(),
    },
  );
}
