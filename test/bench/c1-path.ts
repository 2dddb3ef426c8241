// Where a proxy's added latency goes at c=1: one gRPC call at a time through
// each proxy to three nghttpd endpoints (as balanced.ts runs them: the proxy
// on core 0, h2load on core 1), with the kernel's scheduler switches and the
// proxy's write system calls recorded by `perf record -a` (tracepoints
// sched:sched_switch, sched:sched_wakeup and the write, writev, sendto and
// sendmsg system calls; root and Debian's linux-perf). Each call's path on the proxy's core, read from the trace:
//
// | segment                       | from                                      | to                                         |
// |-------------------------------|-------------------------------------------|--------------------------------------------|
// | request: woken to write       | the proxy switched in from idle           | its write of the request begins            |
// | request write                 | that write (the one waking the endpoint)  | it returns                                 |
// | request written, to yielding  | that write returns                        | the endpoint switched in                   |
// | endpoint on the proxy's core  | the endpoint switched in                  | it switched out, its answer written        |
// | response: endpoint to write   | the endpoint switched out                 | the proxy's write of the answer begins     |
// | response write                | that write (the one waking h2load)        | it returns                                 |
// | after the write, to sleep     | that write returns                        | the proxy switched out to idle             |
//
// The endpoint runs on the proxy's core when the kernel wakes it there (a
// write's wakeup is synchronous), and only once the proxy yields; what the
// proxy still does after its request write (its event loop's bookkeeping)
// waits until the endpoint has answered and is on the path too, in "response:
// endpoint to write". Medians over the calls whose switches follow that order.
// "endpoint preempted" counts the calls whose endpoint took the core from the
// proxy while the proxy could still run (switched out runnable, not asleep):
// then the proxy's work after its request write waits behind the endpoint.
// "proxy preempted the endpoint" counts those whose proxy, woken by the
// answer, took the core back from an endpoint that could still run.
// Figures to compare, not assertions; the trace slows each call a little.
//
//   node --import tsx test/bench/c1-path.ts [--calls 3000] [--only balanced,pipe,nginx,haproxy]
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeSelfSignedCert } from '../../sidecar/test/support/certs.ts';
import { median } from './bench-report.ts';
import { h2load } from './h2load.ts';
import { haproxy, nginx, nodePipe, rpcscopeOutbound, type Peer, type Route } from './peers.ts';
import { startNghttpd } from './upstreams.ts';
import { ONE_AT_A_TIME, workloads, writeFiles } from './workloads.ts';

const args = process.argv.slice(2);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const CALLS = Number(value('--calls') ?? 3000);
const ONLY = (value('--only') ?? '').split(',').filter(Boolean);
if (!Number.isInteger(CALLS) || CALLS < 100) throw new Error(`--calls must be an integer of 100 or more, got ${value('--calls')}`);
if (spawnSync('perf', ['--version']).status !== 0) throw new Error('c1-path.ts needs perf (apt-get install linux-perf)');

const node = process.versions.node.split('.')[0]!;
const all: Peer[] = [rpcscopeOutbound('relay', node, process.execPath), nodePipe(node, process.execPath), nginx, haproxy];
const unknown = ONLY.filter((o) => !all.some((p) => p.key === o));
if (unknown.length) throw new Error(`--only: unknown ${unknown.join(', ')} (peers: ${all.map((p) => p.key).join(', ')})`);
const peers = ONLY.length ? all.filter((p) => ONLY.includes(p.key)) : all;

const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-c1-path-'));
const cert = makeSelfSignedCert();
const files = writeFiles(work);
const w = workloads(work, files, CALLS, 2000).find((x) => x.id === 'grpc-256')!;
/** The scheduler's switches and wakeups, and the system calls a proxy writes a socket with (write, writev; send and sendmsg for HAProxy). */
const TRACEPOINTS = ['sched:sched_switch', 'sched:sched_wakeup', ...['write', 'writev', 'sendto', 'sendmsg'].flatMap((c) => [`syscalls:sys_enter_${c}`, `syscalls:sys_exit_${c}`])];

const SEGMENTS = ['request: woken to write', 'request write', 'request written, to yielding', "endpoint on the proxy's core", 'response: endpoint to write', 'response write', 'after the write, to sleep'] as const;
type Segment = (typeof SEGMENTS)[number];

interface Event {
  tid: number;
  cpu: number;
  us: number;
  kind: 'switch' | 'wakeup' | 'enter' | 'exit';
  /** For a switch: the thread switched out, its comm, and the one switched in; for a wakeup, the woken thread's comm as nextComm. */
  prevTid?: number;
  prevComm?: string;
  /** For a switch: whether the thread switched out could still run (prev_state R: preempted), not asleep. */
  preempted?: boolean;
  nextTid?: number;
  nextComm?: string;
}

const LINE = /^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$/;
const SWITCH = /prev_comm=(.+?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.+?) next_pid=(\d+)/;

/** The lines of a file, read a MiB at a time: a system-wide trace's text can pass the longest string V8 makes (512 MiB). */
function* linesOf(file: string): Generator<string> {
  const fd = openSync(file, 'r');
  const buf = Buffer.alloc(1 << 20);
  let carry = '';
  try {
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) {
      const lines = (carry + buf.toString('latin1', 0, n)).split('\n');
      carry = lines.pop()!;
      yield* lines;
    }
    if (carry) yield carry;
  } finally {
    closeSync(fd);
  }
}

function events(data: string): Event[] {
  const text = `${data}.txt`;
  const fd = openSync(text, 'w');
  spawnSync('perf', ['script', '-i', data], { stdio: ['ignore', fd, 'ignore'] });
  closeSync(fd);
  const out: Event[] = [];
  for (const line of linesOf(text)) {
    const m = LINE.exec(line);
    if (!m) continue;
    const [, , tid, cpu, secs, name, rest] = m;
    const base = { tid: Number(tid), cpu: Number(cpu), us: Number(secs) * 1e6 };
    if (name === 'sched:sched_switch') {
      const s = SWITCH.exec(rest!);
      if (s) out.push({ ...base, kind: 'switch', prevComm: s[1], prevTid: Number(s[2]), preempted: s[3]!.startsWith('R'), nextComm: s[4], nextTid: Number(s[5]) });
    } else if (name === 'sched:sched_wakeup') {
      const c = /comm=(.+?) pid=/.exec(rest!);
      if (c) out.push({ ...base, kind: 'wakeup', nextComm: c[1] });
    } else if (name!.startsWith('syscalls:sys_enter_')) out.push({ ...base, kind: 'enter' });
    else if (name!.startsWith('syscalls:sys_exit_')) out.push({ ...base, kind: 'exit' });
  }
  // The trace and its text run to hundreds of MiB each: gone once read.
  rmSync(text);
  rmSync(data);
  return out;
}

/**
 * Each call's segments on the proxy's core, from the events in order: the
 * request's write is the one that wakes the endpoint, the response's the one
 * that wakes h2load (a proxy may write other frames between). A call whose
 * events leave that order is dropped.
 */
function segments(evs: readonly Event[], proxy: number, cpu: number): { seg: Map<Segment, number[]>; byEndpoint: number; byProxy: number } {
  const got = new Map<Segment, number[]>(SEGMENTS.map((s) => [s, []]));
  const add = (s: Segment, v: number): void => void got.get(s)!.push(v);
  type State = 'idle' | 'woken' | 'requestWritten' | 'endpoint' | 'endpointDone' | 'responseWritten';
  let state: State = 'idle';
  let at = 0;
  let endpointIn = 0;
  let writeStart: number | undefined;
  let woke: string | undefined;
  /** Calls whose endpoint took the core from the proxy still runnable, and whose proxy took it back from the endpoint still runnable. */
  let byEndpoint = 0;
  let byProxy = 0;
  for (const e of evs) {
    if (e.cpu !== cpu) continue;
    if (e.kind === 'wakeup') {
      if (writeStart !== undefined) woke = e.nextComm;
      continue;
    }
    if (e.kind === 'switch') {
      if (e.nextTid === proxy && e.prevComm!.startsWith('swapper')) [state, at] = ['woken', e.us];
      else if (e.prevTid === proxy && e.nextComm === 'nghttpd' && state === 'requestWritten') {
        add('request written, to yielding', e.us - at);
        if (e.preempted) byEndpoint++;
        [state, endpointIn] = ['endpoint', e.us];
      } else if (e.prevComm === 'nghttpd' && e.nextTid === proxy && state === 'endpoint') {
        add("endpoint on the proxy's core", e.us - endpointIn);
        if (e.preempted) byProxy++;
        [state, at] = ['endpointDone', e.us];
      } else if (e.prevTid === proxy && e.nextComm!.startsWith('swapper')) {
        if (state === 'responseWritten') add('after the write, to sleep', e.us - at);
        state = 'idle';
      } else if ((e.prevTid === proxy || e.nextTid === proxy) && state !== 'requestWritten') state = 'idle';
      continue;
    }
    if (e.tid !== proxy) continue;
    if (e.kind === 'enter') [writeStart, woke] = [e.us, undefined];
    else if (writeStart !== undefined) {
      if (woke === 'nghttpd' && state === 'woken') {
        add('request: woken to write', writeStart - at);
        add('request write', e.us - writeStart);
        [state, at] = ['requestWritten', e.us];
      } else if (woke === 'h2load' && state === 'endpointDone') {
        add('response: endpoint to write', writeStart - at);
        add('response write', e.us - writeStart);
        [state, at] = ['responseWritten', e.us];
      }
      writeStart = undefined;
    }
  }
  return { seg: got, byEndpoint, byProxy };
}

const endpoints = [await startNghttpd(files.docroot), await startNghttpd(files.docroot), await startNghttpd(files.docroot)];
const route: Route = { frontend: 'h2c', upstream: endpoints[0]!.url, upstreamProto: 'h2', direct: endpoints[0]!.url, endpoints: endpoints.map((u) => u.url) };
const rows: { name: string; p50: number; calls: number; seg: Map<Segment, number[]>; byEndpoint: number; byProxy: number }[] = [];
const skipped: string[] = [];
try {
  for (const p of peers) {
    const t = await p.start(route, { work, certFile: cert.certFile, keyFile: cert.keyFile, proxyCore: '0' });
    if (typeof t === 'string') {
      skipped.push(`${p.name}: ${t}`);
      continue;
    }
    process.stderr.write(`${p.name}\n`);
    try {
      const url = t.url + w.path;
      h2load(url, w.saturation, w.request, 10_000, '1');
      h2load(url, ONE_AT_A_TIME, w.request, 1000, '1');
      const data = join(work, `${p.key}.perf`);
      const rec = spawn('perf', ['record', '-a', '-q', '-o', data, ...TRACEPOINTS.flatMap((t) => ['-e', t])], { stdio: 'ignore' });
      await new Promise((r) => setTimeout(r, 1500));
      const load = h2load(url, ONE_AT_A_TIME, w.request, CALLS, '1');
      const exited = new Promise((r) => rec.once('exit', r));
      rec.kill('SIGINT');
      await exited;
      rows.push({ name: p.name, p50: load.p50Us, calls: load.ok, ...segments(events(data), t.pid!, 0) });
    } finally {
      await t.stop();
    }
  }
} finally {
  for (const e of endpoints) e.stop();
}

const fmt = (xs: number[]): string => (xs.length ? `${median(xs).toFixed(1)}` : '–');
console.log(`\nc=1 through each proxy (core 0; h2load on core 1), ${CALLS} calls traced; medians in µs, calls counted per segment in brackets.\n`);
console.log(`| | h2load p50 (traced) | ${SEGMENTS.join(' | ')} | sum | endpoint preempted | proxy preempted the endpoint |`);
console.log(`|---|---|${SEGMENTS.map(() => '---').join('|')}|---|---|---|`);
for (const r of rows) {
  const sum = SEGMENTS.reduce((a, s) => a + (r.seg.get(s)!.length ? median(r.seg.get(s)!) : 0), 0);
  // Each count over the calls its switch was read for: the endpoint taking the core, and leaving it.
  const n = (s: Segment): number => r.seg.get(s)!.length;
  console.log(`| ${r.name} | ${r.p50} | ${SEGMENTS.map((s) => `${fmt(r.seg.get(s)!)} [${n(s)}]`).join(' | ')} | ${sum.toFixed(1)} | ${r.byEndpoint} of ${n('request written, to yielding')} | ${r.byProxy} of ${n("endpoint on the proxy's core")} |`);
}
for (const s of skipped) console.log(`- skipped ${s}`);
