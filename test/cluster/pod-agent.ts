// What runs inside each network namespace of the cluster in a box, started by
// cluster.ts as `ip netns exec <ns> node --import tsx pod-agent.ts` with an IPC
// channel (a socketpair, which no namespace or iptables rule touches): the
// container runtime, kubelet and `kubectl exec` of its pod in one process. It
// starts the pod's app (the demo order service) in-process and its sidecar (the
// real sidecar/bin/rpcscope) as a child, which so shares the namespace; it
// fetches addresses as seen from inside the pod (the sidecar's loopback-only
// /debug/connections, readiness probes from the node); and it runs the client
// pod's calls, keeping a tally of every one. It exits when the test process goes
// away, taking its sidecar with it, so no crashed run leaves processes behind.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { Resolver } from 'node:dns/promises';
import { startOrderService, type Upstream } from '@rpcscope/demo';
import { RPCSCOPE_BIN } from '@rpcscope/demo/sidecar-process';
import { OrderClient } from '../fleet/order-client.ts';
import type { AgentRequest, CallTally, LoadSpec } from './agent-protocol.ts';

let app: Upstream | undefined;
let sidecar: ChildProcess | undefined;
let sidecarLog = '';
const clients = new Map<string, OrderClient>();
const restAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function send(message: unknown): void {
  if (process.connected) process.send!(message);
}

/** GET (or the given method) from inside the namespace; any answer is a result, only a failure to connect is an error. */
function fetchHere(url: string, timeoutMs: number, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

function startSidecar(args: string[], env: Record<string, string>): Promise<{ pid: number; listen: string; admin: string }> {
  sidecarLog = '';
  const proc = spawn(RPCSCOPE_BIN, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  sidecar = proc;
  proc.stderr!.on('data', (d: Buffer) => (sidecarLog = (sidecarLog + d.toString()).slice(-200_000)));
  proc.once('exit', (code, signal) => send({ event: 'sidecarExit', pid: proc.pid, code, signal }));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rpcscope did not start within 20 s:\n${sidecarLog}`)), 20_000);
    const onData = (): void => {
      const line = sidecarLog.split('\n').find((l) => l.includes('"rpcscope started"'));
      if (line === undefined) return;
      clearTimeout(timer);
      proc.stderr!.off('data', onData);
      const started = JSON.parse(line) as { listen: string; admin: string };
      resolve({ pid: proc.pid!, listen: started.listen, admin: started.admin });
    };
    proc.stderr!.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`rpcscope exited with ${code} before starting:\n${sidecarLog}`));
    });
  });
}

/** One grpc-js channel (so one HTTP/2 connection) per key, kept across loads as a service keeps its channel. */
function clientFor(key: string, target: string): OrderClient {
  let c = clients.get(key);
  if (!c) clients.set(key, (c = new OrderClient(target)));
  return c;
}

function restCall(target: string, id: string, deadlineMs: number, delayMs: number | undefined): Promise<{ code: string; pod: string; detail?: string }> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = delayMs === undefined ? {} : { 'x-delay-ms': String(delayMs) };
    const req = http.request(`http://${target}/v1/orders/${id}`, { agent: restAgent, headers, timeout: deadlineMs }, (res) => {
      res.resume();
      res.on('end', () => resolve({ code: String(res.statusCode), pod: String(res.headers['x-pod'] ?? '') }));
      res.on('error', (err) => resolve({ code: 'RESET', pod: '', detail: err.message }));
    });
    req.on('timeout', () => req.destroy(new Error('deadline')));
    req.on('error', (err) => resolve({ code: err.message === 'deadline' ? 'DEADLINE_EXCEEDED' : 'RESET', pod: '', detail: err.message }));
    req.end();
  });
}

/** Calls paced over `durationMs`, `concurrency` at a time; every call's outcome and times are kept. Bounded by `calls`. */
async function load(spec: LoadSpec): Promise<CallTally[]> {
  const concurrency = spec.concurrency ?? 1;
  const spacingMs = spec.durationMs === undefined ? 0 : (spec.durationMs * concurrency) / spec.calls;
  const tally: CallTally[] = [];
  let started = 0;
  const begin = Date.now();
  // A client per worker when asked (each its own connection), else one shared channel, as a service holds one.
  const worker = async (w: number): Promise<void> => {
    const client = spec.protocol === 'rest' ? undefined : clientFor(spec.connectionPerWorker ? `${spec.target}#${w}` : spec.target, spec.target);
    while (started < spec.calls) {
      const n = started++;
      const due = begin + Math.floor(n / concurrency) * spacingMs + (w * spacingMs) / concurrency;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const id = `ord-${String((n % 24) + 1).padStart(6, '0')}`;
      const start = Date.now();
      const deadlineMs = spec.deadlineMs ?? 10_000;
      const r =
        spec.protocol === 'rest'
          ? await restCall(spec.target, id, deadlineMs, spec.delayMs)
          : await client!.getOrder(id, { deadlineMs, ...(spec.delayMs === undefined ? {} : { delayMs: spec.delayMs }) });
      tally.push({ n, worker: w, code: r.code, pod: r.pod, start, end: Date.now(), ...(r.detail === undefined ? {} : { detail: r.detail }) });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  return tally.sort((a, b) => a.n - b.n);
}

async function handle(req: AgentRequest): Promise<unknown> {
  switch (req.op) {
    case 'startApp':
      app = await startOrderService({ host: req.host, port: req.port, podName: req.podName, latencyScale: 0 });
      return { port: app.port };
    case 'stopApp':
      await app?.close();
      app = undefined;
      return {};
    case 'startSidecar':
      return startSidecar(req.args, req.env);
    case 'sidecarLog':
      return { log: sidecarLog };
    case 'fetch':
      return fetchHere(req.url, req.timeoutMs ?? 2000, req.method);
    case 'resolve': {
      const r = new Resolver({ timeout: 500, tries: 1 });
      r.setServers([req.server]);
      return { addresses: await r.resolve4(req.name).then((a) => a.sort(), () => []) };
    }
    case 'load':
      return { tally: await load(req.spec) };
    case 'closeClients':
      for (const c of clients.values()) c.close();
      clients.clear();
      restAgent.destroy();
      return {};
  }
}

process.on('message', (msg: AgentRequest & { id: number }) => {
  handle(msg).then(
    (result) => send({ id: msg.id, ok: true, result }),
    (err: Error) => send({ id: msg.id, ok: false, error: err.message }),
  );
});
// The test process went away (finished or crashed): the pod goes with it.
process.on('disconnect', () => {
  sidecar?.kill('SIGKILL');
  process.exit(0);
});
send({ event: 'ready', pid: process.pid });
