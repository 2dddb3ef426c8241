// One gRPC client of the order service, as a typical service holds it: a
// @grpc/grpc-js channel to one address, so one HTTP/2 connection that carries
// every call until the server sends GOAWAY or the connection breaks, and then
// one new connection. Messages are the demo's protobuf-es types, so this needs
// no proto loading of its own.
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary, type MessageShape } from '@bufbuild/protobuf';
import { DELAY_HEADER, OrderService } from '@rpcscope/demo';

const GET_ORDER = OrderService.method.getOrder;
const GET_ORDER_PATH = `/${OrderService.typeName}/${GET_ORDER.name}`;

export interface CallResult {
  /** The gRPC status code name the client saw (`OK`, `UNAVAILABLE`, ...). */
  code: string;
  /** The `x-pod` response header: which replica answered, empty when none did. */
  pod: string;
  /** A failed call's status message, for a test's failure to say why. */
  detail?: string;
}

export interface CallOptions {
  /** Asks the order service to take this much longer (its `x-delay-ms` header). */
  delayMs?: number;
  /** The call's deadline from now; default 10 s. */
  deadlineMs?: number;
}

export class OrderClient {
  private readonly client: grpc.Client;

  /** `target` is `host:port`, as a grpc-js channel takes it. */
  constructor(target: string) {
    this.client = new grpc.Client(target, grpc.credentials.createInsecure(), {
      // Its own connection, never one shared with another client of the same target.
      'grpc.use_local_subchannel_pool': 1,
    });
  }

  getOrder(id: string, opts: CallOptions = {}): Promise<CallResult> {
    const metadata = new grpc.Metadata();
    if (opts.delayMs !== undefined) metadata.set(DELAY_HEADER, String(opts.delayMs));
    return new Promise((resolve) => {
      let pod = '';
      const call = this.client.makeUnaryRequest(
        GET_ORDER_PATH,
        (req: MessageShape<typeof GET_ORDER.input>) => Buffer.from(toBinary(GET_ORDER.input, req)),
        (bytes: Buffer) => fromBinary(GET_ORDER.output, bytes),
        create(GET_ORDER.input, { id }),
        metadata,
        { deadline: Date.now() + (opts.deadlineMs ?? 10_000) },
        (err) => resolve(err ? { code: grpc.status[err.code] ?? String(err.code), pod, detail: err.details } : { code: 'OK', pod }),
      );
      call.on('metadata', (headers: grpc.Metadata) => {
        pod = String(headers.get('x-pod')[0] ?? '');
      });
    });
  }

  close(): void {
    this.client.close();
  }
}

export interface LoadOptions extends CallOptions {
  calls: number;
  /** Calls in flight at once; default 1 (each call starts when the previous ends). */
  concurrency?: number;
  /** Spreads the calls over about this long, so that they span several scrapes; default 0 (as fast as they go). */
  durationMs?: number;
}

export interface LoadResult {
  /** Each call's result, in the order the calls were started (not the order they ended). */
  results: CallResult[];
  /** Calls answered per pod (`x-pod`). */
  perPod: Record<string, number>;
  /** Calls per status code name. */
  perCode: Record<string, number>;
}

/** Sends `calls` GetOrder calls through `client`, `concurrency` at a time. */
export async function sendLoad(client: OrderClient, opts: LoadOptions): Promise<LoadResult> {
  const concurrency = opts.concurrency ?? 1;
  const spacingMs = opts.durationMs === undefined ? 0 : (opts.durationMs * concurrency) / opts.calls;
  const results: CallResult[] = [];
  let started = 0;
  // Where each call lands in `results`: the order the calls really went out, which
  // the workers' spacing can make differ from the order they were taken in.
  let sent = 0;
  const begin = Date.now();
  const worker = async (w: number): Promise<void> => {
    while (started < opts.calls) {
      const n = started++;
      const due = begin + Math.floor(n / concurrency) * spacingMs + (w * spacingMs) / concurrency;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const slot = sent++;
      results[slot] = await client.getOrder(`ord-${String((n % 24) + 1).padStart(6, '0')}`, opts);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  return { results, perPod: countBy(results, (r) => r.pod), perCode: countBy(results, (r) => r.code) };
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}
