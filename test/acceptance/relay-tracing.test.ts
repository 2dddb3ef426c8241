// Tracing on the relay (translate mode): the relay writes each request's header
// block anew with the sidecar's traceparent, so a real grpc-js upstream reads a
// traceparent naming the span the sidecar exports, on every call of a connection
// whose client leans on its HPACK dynamic table, a header block too large for
// one frame included; every other frame passes as before.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, type EchoRequestObject, type EchoResponseObject } from '@rpcscope/demo';
import { parseExposition } from '../support/metrics-text.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
/** Larger than one 16 KiB frame: the block goes upstream as HEADERS and CONTINUATION. */
const BIG = 'b'.repeat(20_000);

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
}

interface Seen {
  traceparent: string | undefined;
  n: string | undefined;
  big: number;
}

/** A grpc-js Echo upstream that remembers each call's traceparent and the metadata the test sends. */
async function startUpstream(): Promise<{ url: string; seen: Seen[]; close(): void }> {
  const seen: Seen[] = [];
  const server = new grpc.Server({ 'grpc.max_metadata_size': 256 * 1024 });
  server.addService(GrpcJsEchoClient.service, {
    Echo: (call: grpc.ServerUnaryCall<EchoRequestObject, EchoResponseObject>, cb: grpc.sendUnaryData<EchoResponseObject>) => {
      const md = call.metadata;
      seen.push({ traceparent: md.get('traceparent')[0] as string | undefined, n: md.get('x-n')[0] as string | undefined, big: String(md.get('x-big')[0] ?? '').length });
      cb(null, { message: call.request.message, index: 0, payload: Buffer.alloc(0) });
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { url: `http://127.0.0.1:${port}`, seen, close: () => server.forceShutdown() };
}

function echo(client: Client, message: string, md: Record<string, string>): Promise<string> {
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(md)) metadata.set(k, v);
  return new Promise((resolve, reject) => client.Echo({ message }, metadata, { deadline: Date.now() + 20_000 }, (err, res) => (err ? reject(err) : resolve(res!.message))));
}

describe('tracing through the relay (translate mode)', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let receiver: OtlpReceiver;
  let sc: SidecarProcess;
  before(async () => {
    upstream = await startUpstream();
    receiver = await startOtlpReceiver();
    sc = await startSidecarProcess(['--upstream', upstream.url, '--data-plane', 'relay'], { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' });
  });
  after(async () => {
    await sc.stop();
    upstream.close();
    await receiver.close();
  });

  it("hands a grpc-js upstream the sidecar's span on every call, the HPACK tables in step", async () => {
    // Two channels that do not share a connection: the relay opens an upstream connection for each.
    const clients = [0, 1].map(() => new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as Client);
    const calls = 40;
    try {
      for (let n = 0; n < calls; n += 4) {
        // Four at a time, half continuing the caller's trace; grpc-js indexes the repeated fields in its table.
        await Promise.all([0, 1, 2, 3].map(async (k) => {
          const i = n + k;
          const md: Record<string, string> = { 'x-n': String(i), ...(i % 2 === 0 ? { traceparent: CALLER_TRACEPARENT } : {}), ...(i === 17 ? { 'x-big': BIG } : {}) };
          assert.equal(await echo(clients[i % 2]!, `m${i}`, md), `m${i}`);
        }));
      }
    } finally {
      for (const c of clients) c.close();
    }

    assert.equal(upstream.seen.length, calls);
    assert.deepEqual(upstream.seen.map((s) => Number(s.n)).sort((a, b) => a - b), Array.from({ length: calls }, (_, i) => i));
    assert.equal(upstream.seen.find((s) => s.n === '17')?.big, BIG.length, 'the block past one frame arrived whole');
    const deadline = Date.now() + 10_000;
    const exported = (s: Seen): boolean => receiver.spans.some((x) => x.spanId === s.traceparent?.split('-')[2]);
    while (!upstream.seen.every(exported) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const s of upstream.seen) {
      const [version, traceId, spanId, flags] = (s.traceparent ?? '').split('-');
      const span = receiver.spans.find((x) => x.spanId === spanId);
      assert.ok(span, `call ${s.n}: the upstream's traceparent ${s.traceparent} names no exported span`);
      assert.equal(span.traceId, traceId, `call ${s.n}`);
      assert.equal(span.name, 'echo.v1.EchoService/Echo');
      assert.equal(version, '00');
      if (Number(s.n) % 2 === 0) assert.deepEqual([traceId, flags, span.parentSpanId], [TRACE_ID, '01', '00f067aa0ba902b7'], `call ${s.n} continues the caller's trace`);
      else assert.notEqual(traceId, TRACE_ID);
    }

    // The relay carried them: an upstream connection of its own for each client connection.
    const samples = parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text());
    const opened = (side: string): number =>
      samples.filter((x) => (x.name === 'rpcscope_connections_active' || x.name === 'rpcscope_connection_duration_seconds_count') && x.labels.side === side && x.labels.http_version === '2').reduce((n, x) => n + x.value, 0);
    assert.equal(opened('downstream'), 2);
    assert.equal(opened('upstream'), 2);
    const ok = samples.filter((x) => x.name === 'rpcscope_calls_total' && x.labels.code === 'OK').reduce((n, x) => n + x.value, 0);
    assert.equal(ok, calls);
  });
});
