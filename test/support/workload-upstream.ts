// The series-budget workload (100 gRPC methods × 3 status codes + 20 REST routes,
// half the methods with deadlines) driven through a real sidecar, against an
// HTTP/2 upstream that answers any gRPC path with the status the caller names
// (x-want-status) after the delay it names (x-want-delay-ms), and any other
// path with a small JSON body. Used by the scrape-stall benchmark, the scrape
// test and the native histogram test.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';

export const WORKLOAD_METHODS = 100;
export const WORKLOAD_CODES = [0, 5, 14] as const;
export const WORKLOAD_ROUTES = 20;

export interface WorkloadUpstream {
  url: string;
  close(): Promise<void>;
}

export async function startWorkloadUpstream(): Promise<WorkloadUpstream> {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    stream.resume();
    stream.on('end', () => {
      const answer = (): void => {
        if (stream.destroyed) return;
        if (String(headers['content-type'] ?? '').startsWith('application/grpc')) {
          const status = String(headers['x-want-status'] ?? '0');
          stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
          stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': status }));
          stream.end(status === '0' ? Buffer.from([0, 0, 0, 0, 3, 10, 1, 120]) : undefined);
        } else {
          stream.respond({ ':status': 200, 'content-type': 'application/json' });
          stream.end('{"item":{"id":"1000","name":"a lamp"}}');
        }
      };
      const delay = Number(headers['x-want-delay-ms'] ?? 0);
      if (delay > 0) setTimeout(answer, delay);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** `shop.v1.Catalog4/GetItem042`: ten services of ten methods, as sidecar/test/observe/series-workload.ts names them. */
export function workloadMethod(i: number): string {
  return `shop.v1.Catalog${Math.floor(i / 10)}/GetItem${String(i).padStart(3, '0')}`;
}

/** One length-prefixed gRPC message. */
export const GRPC_BODY = Buffer.from([0, 0, 0, 0, 2, 8, 1]);

/** An HTTP/2 client of the sidecar's proxy port making the workload's calls. */
export class WorkloadClient {
  private readonly session: http2.ClientHttp2Session;

  constructor(proxyUrl: string) {
    this.session = http2.connect(proxyUrl);
    this.session.on('error', () => {});
  }

  /** One call (unary unless `body` holds several gRPC messages); resolves with its milliseconds as the client saw them. */
  call(path: string, headers: http2.OutgoingHttpHeaders, body?: Buffer): Promise<number> {
    const t0 = performance.now();
    return new Promise((resolve, reject) => {
      const req = this.session.request({ ':method': 'POST', ':path': path, ...headers });
      req.on('error', reject);
      req.resume();
      req.on('end', () => resolve(performance.now() - t0));
      req.end(body ?? (headers['content-type'] === 'application/grpc' ? GRPC_BODY : undefined));
    });
  }

  /** A unary gRPC call of method `i` answered with `code` after `delayMs`; even methods carry a 5 s deadline. */
  grpc(i: number, code: number, delayMs = 0): Promise<number> {
    return this.call(`/${workloadMethod(i)}`, {
      'content-type': 'application/grpc',
      te: 'trailers',
      'x-want-status': String(code),
      ...(delayMs > 0 ? { 'x-want-delay-ms': String(delayMs) } : {}),
      ...(i % 2 === 0 ? { 'grpc-timeout': '5S' } : {}),
    });
  }

  /** Every series of the workload: each method answered with each code three times, each REST route three times. */
  async fill(): Promise<void> {
    for (let i = 0; i < WORKLOAD_METHODS; i++) for (const code of WORKLOAD_CODES) for (let n = 0; n < 3; n++) await this.grpc(i, code);
    for (let r = 0; r < WORKLOAD_ROUTES; r++) {
      for (let n = 0; n < 3; n++) await this.call(`/v1/catalog/section${r}/items/${1000 + n}`, { ':method': r % 2 ? 'GET' : 'POST' });
    }
  }

  close(): void {
    this.session.close();
  }
}
