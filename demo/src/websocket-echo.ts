import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { UpgradeHandler } from './h2c-listener.ts';

export type WebSocketEcho = {
  onUpgrade: UpgradeHandler;
  /** Terminates every open WebSocket without a closing handshake, for a prompt server close(). */
  terminateAll(): void;
};

/** A WebSocket echo on `path`, fed by the HTTP/1.1 server's upgrade event (noServer: the port belongs to the h2c listener). */
export function websocketEcho(path: string): WebSocketEcho {
  const wss = new WebSocketServer({ noServer: true });
  wss.on('error', () => {});
  wss.on('connection', (ws) => {
    ws.on('error', () => {});
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
  return {
    onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
      const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
      if (pathname !== path) {
        socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    },
    terminateAll() {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
  };
}
