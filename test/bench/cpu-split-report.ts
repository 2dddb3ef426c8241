// Where a proxy's CPU per call goes, from `perf record -e cpu-clock -g` (a
// software clock: it samples on machines without hardware counters, as this
// KVM guest has none) read back with `perf report`. The samples of the proxy
// process (every thread) are sorted into buckets, the same for a Node proxy
// and a C one, so that rpcscope's rows read beside nginx's line by line:
//
// | bucket               | what falls in it (perf's dso, then its symbol)                                  |
// |----------------------|----------------------------------------------------------------------------------|
// | kernel               | [kernel.kallsyms]: system calls, the TCP stack, waking peers, switches            |
// | proxy code           | the proxy's own compiled code: its binary (nginx, haproxy, nghttpx), or the       |
// |                      | JavaScript of the sidecar's bundle or a bench script (`JS:` frames not `node:`)   |
// | Node's JavaScript    | `JS:` frames of Node's own modules (`node:`: streams, timers, buffer, net)         |
// | V8 builtins          | `Builtins_*` (inline caches, typed arrays, calls) and JIT stubs without a name    |
// | garbage collection   | V8's heap: scavenges, marking, sweeping, write barriers                          |
// | libuv                | `uv_*` / `uv__*`: the event loop                                                  |
// | Node and V8 runtime  | the rest of the node binary: node:: C++ (MakeCallback, StreamBase), V8's runtime  |
// | libraries            | libc, libstdc++, libnghttp2, libssl, the vdso                                     |
//
// Beside them, the kernel's main paths, inclusive of what they call (children
// in perf's terms), so that they overlap the kernel bucket rather than add to
// it: sending (write/writev/sendto/sendmsg, including the loopback delivery to
// the peer's socket that runs in the sender's softirq, and waking the peer),
// receiving, and waiting in epoll (going to sleep and the switch back).
//
// Pure functions over perf's text output; cpu-split.ts runs perf.

export const BUCKETS = ['kernel', 'proxy code', "Node's JavaScript", 'V8 builtins', 'garbage collection', 'libuv', 'Node and V8 runtime', 'libraries'] as const;
export type Bucket = (typeof BUCKETS)[number];

/** Kernel paths measured inclusive of their callees: the symbols each one starts at. */
export const KERNEL_PATHS = {
  sending: ['ksys_write', 'do_writev', '__sys_sendto', '__sys_sendmsg'],
  'of which waking the peer': ['sock_def_readable'],
  receiving: ['ksys_read', 'do_readv', '__sys_recvfrom', '__sys_recvmsg'],
  'waiting in epoll': ['do_epoll_wait'],
} as const;
export type KernelPath = keyof typeof KERNEL_PATHS;

const GC = /Scaveng|::Heap::|Heap::|GCTracer|Marking|MarkCompact|Sweep|Evacuat|RecordWrite|Mark(ing)?Barrier|WriteBarrier|MemoryAllocator|ConcurrentMark/;

/** The bucket of one sample's frame: `dso` and `sym` as `perf report -F sample,dso,sym` prints them. */
export function bucketOf(dso: string, sym: string, binary: string): Bucket {
  const d = dso.trim();
  const s = sym.trim().replace(/^\[[.k]\]\s*/, '');
  if (d === '[kernel.kallsyms]' || d.startsWith('[kernel')) return 'kernel';
  if (s.startsWith('JS:')) return / node:/.test(s) ? "Node's JavaScript" : 'proxy code';
  if (d.startsWith('[JIT]')) return 'V8 builtins';
  if (d === binary) {
    if (binary !== 'node') return 'proxy code';
    if (GC.test(s)) return 'garbage collection';
    if (s.startsWith('Builtins_')) return 'V8 builtins';
    if (s.startsWith('uv_') || s.startsWith('uv__')) return 'libuv';
    return 'Node and V8 runtime';
  }
  return 'libraries';
}

export interface CpuSplit {
  /** Samples of the process over the run. */
  samples: number;
  /** Samples per bucket (self time: each sample in exactly one). */
  buckets: Record<Bucket, number>;
  /** Samples under each kernel path (inclusive: they overlap each other's callees and the kernel bucket). */
  kernelPaths: Record<KernelPath, number>;
  /** The most sampled symbols, self time: [bucket, symbol, samples]. */
  top: [Bucket, string, number][];
}

/**
 * Reads `perf report --no-children -F sample,dso,sym -g none -t '\t'` (self
 * samples per symbol) and `perf report --children --sort sym -g none` (inclusive
 * percentages) for one process whose executable is `binary` (node, nginx…).
 */
export function cpuSplit(selfReport: string, childrenReport: string, binary: string, topN = 12): CpuSplit {
  const buckets = Object.fromEntries(BUCKETS.map((b) => [b, 0])) as Record<Bucket, number>;
  const rows: [Bucket, string, number][] = [];
  let samples = 0;
  for (const line of selfReport.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const [count, dso, sym] = line.split('\t');
    const n = Number(count);
    if (!Number.isFinite(n) || dso === undefined || sym === undefined) continue;
    const b = bucketOf(dso, sym, binary);
    buckets[b] += n;
    samples += n;
    rows.push([b, sym.trim().replace(/^\[[.k]\]\s*/, ''), n]);
  }
  rows.sort((a, b) => b[2] - a[2]);
  const kernelPaths = Object.fromEntries(Object.keys(KERNEL_PATHS).map((k) => [k, 0])) as Record<KernelPath, number>;
  // "    32.00%     0.08%  [k] ksys_write": children %, self %, [k], symbol.
  const inclusive = new Map<string, number>();
  for (const line of childrenReport.split('\n')) {
    const m = /^\s*([\d.]+)%\s+[\d.]+%\s+\[k\]\s+(\S+)\s*$/.exec(line);
    if (m) inclusive.set(m[2]!, Number(m[1]));
  }
  for (const [path, syms] of Object.entries(KERNEL_PATHS) as [KernelPath, readonly string[]][]) {
    const percent = syms.reduce((sum, s) => sum + (inclusive.get(s) ?? 0), 0);
    kernelPaths[path] = Math.round((percent / 100) * samples);
  }
  return { samples, buckets, kernelPaths, top: rows.slice(0, topN) };
}

export interface SplitRow {
  name: string;
  calls: number;
  /** perf's sampling frequency, Hz: a sample stands for 1/frequency s of CPU. */
  frequency: number;
  split: CpuSplit;
}

const perCall = (samples: number, row: SplitRow): number => (samples / row.frequency / row.calls) * 1e6;
const fmt = (us: number): string => (us >= 10 ? us.toFixed(0) : us.toFixed(1));

/** µs of CPU per call in each bucket, one column per proxy; the last row is the total. */
export function splitTable(rows: readonly SplitRow[]): string {
  const head = `| µs of CPU per call | ${rows.map((r) => r.name).join(' | ')} |\n|---|${rows.map(() => '---:').join('|')}|\n`;
  const line = (label: string, pick: (r: SplitRow) => number): string => `| ${label} | ${rows.map((r) => fmt(perCall(pick(r), r))).join(' | ')} |\n`;
  let out = head;
  for (const b of BUCKETS) out += line(b, (r) => r.split.buckets[b]);
  for (const k of Object.keys(KERNEL_PATHS) as KernelPath[]) out += line(`kernel, ${k} (inclusive)`, (r) => r.split.kernelPaths[k]);
  out += line('**total**', (r) => r.split.samples);
  return out;
}

/** The most sampled symbols of one proxy, µs per call each. */
export function topTable(row: SplitRow): string {
  let out = `| ${row.name}: symbol (self) | bucket | µs/call |\n|---|---|---:|\n`;
  for (const [bucket, sym, n] of row.split.top) out += `| ${sym.replace(/\|/g, '\\|')} | ${bucket} | ${fmt(perCall(n, row))} |\n`;
  return out;
}
