// The HTTP/1.1 relay's upstream connections that no client connection holds:
// one its client left (or handed to the terminating path) while the app kept
// it. The next client connection's request takes the newest one rather than
// connecting, so that callers who open a connection per call (health checks,
// clients without keep-alive) cost the app one connection, not one each, as the
// terminating path's agent keeps them. Each keeps its slot at the endpoint's gate
// and is offered there too, to the first call waiting for a connection. One
// idle for IDLE_UPSTREAM_SOCKET_MS, or that the app closes or writes to unasked,
// is closed.
import type { EndpointGate, IdleHolder } from '../upstream/endpoint-gate.ts';
import type { H1RelayUpstream, H1UpstreamOwner } from './h1-relay-upstream.ts';

export class H1IdleUpstreams {
  /** Oldest first: the newest, most likely still warm on the app's side, is taken first. */
  private readonly idle: { up: H1RelayUpstream; holder: IdleHolder<H1RelayUpstream> }[] = [];
  private closed = false;
  private readonly owner: H1UpstreamOwner = {
    opened: () => {},
    // Bytes from the app with no request asked: the connection follows no exchange any more.
    data: (up) => this.drop(up),
    ended: (up) => this.drop(up),
    idle: (up) => this.drop(up),
    error: () => {},
    closed: (up) => void this.remove(up),
  };

  constructor(private readonly gate: EndpointGate<H1RelayUpstream>) {}

  /** Keeps `up`, no longer held by any client connection; false (not kept) once draining. */
  put(up: H1RelayUpstream): boolean {
    if (this.closed || !up.reusable) return false;
    up.owner = this.owner;
    const holder: IdleHolder<H1RelayUpstream> = () => {
      if (!this.remove(up)) return undefined;
      if (up.reusable) return up;
      up.socket.destroy();
      return undefined;
    };
    this.idle.push({ up, holder });
    this.gate.idle(holder);
    return true;
  }

  /** The newest kept connection that can carry a request, no longer kept; undefined when none. */
  take(): H1RelayUpstream | undefined {
    for (let e = this.idle.pop(); e; e = this.idle.pop()) {
      this.gate.busy(e.holder);
      if (e.up.reusable) return e.up;
      e.up.socket.destroy();
    }
    return undefined;
  }

  /** Draining or shutting down: every kept connection closes, and none is kept from now. */
  closeAll(): void {
    this.closed = true;
    for (const e of this.idle.splice(0)) {
      this.gate.busy(e.holder);
      e.up.socket.destroy();
    }
  }

  private drop(up: H1RelayUpstream): void {
    if (this.remove(up)) up.socket.destroy();
  }

  /** Stops keeping `up`; false when it was not kept. */
  private remove(up: H1RelayUpstream): boolean {
    const i = this.idle.findIndex((e) => e.up === up);
    if (i < 0) return false;
    this.gate.busy(this.idle[i]!.holder);
    this.idle.splice(i, 1);
    if (up.owner === this.owner) up.owner = undefined;
    return true;
  }
}
