// An upgraded HTTP/1.1 connection (WebSocket, RFC 6455 §4; any protocol named
// in Upgrade, RFC 9110 §7.8): once the app answered 101 Switching Protocols, the
// client's and the app's sockets are joined byte for byte until either side
// closes. The relay hands both sockets over with the bytes each side sent past
// the hand-shake in the read that held it; from then on rpcscope counts the
// bytes and reads none of them. The call ends once both sockets are closed (so
// that every byte is counted), and as on the terminating path
// (proxy/forward-upgrade.ts) a tunnel that closes ended normally, whichever side
// closed it, with its status 101.
import type net from 'node:net';
import type { Call } from '../call/call.ts';
import { now } from '../clock.ts';

/** After one side closed, how long the other has to send what it still holds and close before it is destroyed. */
const CLOSE_LINGER_MS = 1000;

export interface H1TunnelEnds {
  readonly client: net.Socket;
  readonly up: net.Socket;
  /** Client bytes read past the request before the 101, for the app. */
  readonly toUpstream: Buffer | undefined;
  /** App bytes read past the 101 head in the same read, for the client. */
  readonly toClient: Buffer | undefined;
}

export class H1Tunnel {
  private readonly client: net.Socket;
  private readonly up: net.Socket;
  private open = 2;

  /** Joins the sockets; `ended` runs once both are closed, after the call ended. */
  constructor({ client, up, toUpstream, toClient }: H1TunnelEnds, private readonly call: Call, private readonly ended: () => void) {
    this.client = client;
    this.up = up;
    const { tap } = call;
    // A reset on either side only closes the tunnel.
    client.on('error', () => {});
    up.on('error', () => {});
    if (toClient?.length) {
      tap.responseData(toClient);
      client.write(toClient);
    }
    if (toUpstream?.length) {
      tap.requestData(toUpstream);
      up.write(toUpstream);
    }
    client.on('data', (chunk: Buffer) => tap.requestData(chunk));
    up.on('data', (chunk: Buffer) => tap.responseData(chunk));
    // pipe() pauses the side read while the other's write waits for 'drain', and ends the other on 'end'.
    client.pipe(up);
    up.pipe(client);
    // A side already closed at the hand-over (a reset racing the 101) counts as a reset.
    if (client.closed) this.closed(up, true);
    else client.once('close', (hadError: boolean) => this.closed(up, hadError));
    const upClosed = (hadError: boolean): void => {
      call.record.upstreamEndTime ||= now();
      this.closed(client, hadError);
    };
    if (up.closed) upClosed(true);
    else up.once('close', upClosed);
  }

  destroy(): void {
    this.client.destroy();
    this.up.destroy();
  }

  /** One side closed: the other ends too (at once if it was a reset), and the call with the last. */
  private closed(other: net.Socket, hadError: boolean): void {
    if (hadError) other.destroy();
    else {
      other.end();
      setTimeout(() => other.destroy(), CLOSE_LINGER_MS).unref();
    }
    if (--this.open > 0) return;
    this.call.end();
    this.ended();
  }
}
