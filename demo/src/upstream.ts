/** A started demo server, as the sidecar's tests and the demo fleet see it. */
export type Upstream = {
  host: string;
  port: number;
  /** `http://host:port`; the same port serves HTTP/1.1 and HTTP/2 (h2c). */
  url: string;
  /** Stops listening and ends every open connection and stream at once. */
  close(): Promise<void>;
};

/** Options every demo server accepts. */
export type ListenOptions = {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: the OS picks a free port, read it back from `Upstream.port`. */
  port?: number;
};

export const DEFAULT_HOST = '127.0.0.1';

export function upstreamUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
