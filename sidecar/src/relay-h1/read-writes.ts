// What the HTTP/1.1 relay writes to one socket while it processes one read of
// the other, in one write: a request's head and the body bytes read with it. The
// first write waits; a second corks the socket, and the rest follow until the
// read is processed. A read that leads to one write (a GET, a piece of a body) is
// not corked: Node queues each corked write in an object of its own.
import type net from 'node:net';

export class ReadWrites {
  private socket: net.Socket | undefined;
  private held: Buffer | undefined;
  private corked = false;
  private active = false;

  /** @param write writes `bytes` to `socket` now (backpressure is the caller's) */
  constructor(private readonly write: (socket: net.Socket, bytes: Buffer) => void) {}

  /** Runs `read`, the processing of one read, with its writes gathered. */
  run(read: () => void): void {
    this.active = true;
    try {
      read();
    } finally {
      this.active = false;
      this.flush();
    }
  }

  /** Writes `bytes` to `socket`, gathered while a read is processed. */
  send(socket: net.Socket, bytes: Buffer): void {
    if (!this.active) return this.write(socket, bytes);
    // Another socket (a new connection after a closed one): what the first was sent goes first.
    if (this.socket !== socket) this.flush();
    this.socket = socket;
    if (!this.corked) {
      const held = this.held;
      if (held === undefined) {
        this.held = bytes;
        return;
      }
      socket.cork();
      this.corked = true;
      this.held = undefined;
      this.write(socket, held);
    }
    this.write(socket, bytes);
  }

  private flush(): void {
    const { socket, held, corked } = this;
    this.socket = undefined;
    this.held = undefined;
    this.corked = false;
    if (!socket) return;
    if (corked) socket.uncork();
    // A socket let go of meanwhile (destroyed) takes nothing more.
    else if (held && !socket.destroyed) this.write(socket, held);
  }
}
