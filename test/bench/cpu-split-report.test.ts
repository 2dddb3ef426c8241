import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bucketOf, cpuSplit, splitTable, topTable } from './cpu-split-report.ts';

// Lines as `perf report --no-children -F sample,dso,sym -g none -t '\t'` printed them
// for the balanced relay on Node 20 (a JIT map from --perf-basic-prof) and for nginx.
const nodeSelf = [
  '# To display the perf.data header info, please use --header/--header-only options.',
  '#',
  '# Samples  Shared Object      Symbol',
  '2004       \t[kernel.kallsyms]  \t[k] _raw_spin_unlock_irqrestore',
  '1532       \t[kernel.kallsyms]  \t[k] finish_task_switch.isra.0',
  '233        \t[JIT] tid 26095    \t[.] JS:*decode /work/main/sidecar/dist/rpcscope.cjs:298:25225',
  '217        \tnode               \t[.] Builtins_LoadIC',
  '147        \tnode               \t[.] Builtins_RecordWriteSaveFP',
  '120        \t[JIT] tid 26095    \t[.] JS:*writeOrBuffer node:internal/streams/writable:548:23',
  '64         \tnode               \t[.] uv__io_poll',
  '60         \tnode               \t[.] node::StreamBase::WriteBuffer',
  '50         \tnode               \t[.] v8::internal::ScavengerCollector::CollectGarbage',
  '40         \tlibc.so.6          \t[.] _int_malloc',
  '12         \t[JIT] tid 26095    \t[.] 0x00007f3a8c01d2e0',
  '',
].join('\n');

const nodeChildren = [
  '# Children      Self  Symbol',
  '    90.79%     0.00%  [.] node::NodeMainInstance::Run',
  '    32.00%     0.08%  [k] ksys_write',
  '    11.46%     0.10%  [k] sock_def_readable',
  '     3.96%     0.05%  [k] ksys_read',
  '     6.37%     0.12%  [k] do_epoll_wait',
  '     0.05%     0.04%  [k] __x64_sys_write',
].join('\n');

test('each sample of a Node proxy falls in one bucket: the kernel, its own JavaScript, Node\'s, builtins, GC, libuv, the runtime, libraries', () => {
  const s = cpuSplit(nodeSelf, nodeChildren, 'node');
  assert.equal(s.samples, 2004 + 1532 + 233 + 217 + 147 + 120 + 64 + 60 + 50 + 40 + 12);
  assert.deepEqual(s.buckets, {
    kernel: 2004 + 1532,
    'proxy code': 233,
    "Node's JavaScript": 120,
    'V8 builtins': 217 + 12,
    'garbage collection': 147 + 50,
    libuv: 64,
    'Node and V8 runtime': 60,
    libraries: 40,
  });
  assert.equal(Object.values(s.buckets).reduce((a, b) => a + b, 0), s.samples);
  assert.deepEqual(s.top.slice(0, 3), [
    ['kernel', '_raw_spin_unlock_irqrestore', 2004],
    ['kernel', 'finish_task_switch.isra.0', 1532],
    ['proxy code', 'JS:*decode /work/main/sidecar/dist/rpcscope.cjs:298:25225', 233],
  ]);
});

test('the kernel paths are the inclusive shares of their entry points, in samples of the process', () => {
  const s = cpuSplit(nodeSelf, nodeChildren, 'node');
  assert.equal(s.kernelPaths.sending, Math.round(0.32 * s.samples));
  assert.equal(s.kernelPaths['of which waking the peer'], Math.round(0.1146 * s.samples));
  assert.equal(s.kernelPaths.receiving, Math.round(0.0396 * s.samples));
  assert.equal(s.kernelPaths['waiting in epoll'], Math.round(0.0637 * s.samples));
});

test('a C proxy\'s own binary is its code; other libraries are libraries, whatever the symbol', () => {
  assert.equal(bucketOf('nginx            ', '[.] ngx_http_huff_decode', 'nginx'), 'proxy code');
  assert.equal(bucketOf('nginx', '[.] uv__io_poll', 'nginx'), 'proxy code');
  assert.equal(bucketOf('libnghttp2.so.14', '[.] nghttp2_session_mem_recv', 'nghttpx'), 'libraries');
  assert.equal(bucketOf('[kernel.kallsyms]', '[k] tcp_ack', 'haproxy'), 'kernel');
  // A bench script's JavaScript (the byte pipe) is the proxy's own code too.
  assert.equal(bucketOf('[JIT] tid 7', '[.] JS:*copy file:///work/main/test/bench/node-pipe.ts:22:5', 'node'), 'proxy code');
});

test('the tables give µs per call: samples over the sampling frequency over the calls', () => {
  const split = cpuSplit(nodeSelf, nodeChildren, 'node');
  // 4,000 samples a second: one sample is 250 µs; over 100 calls, 2.5 µs a call.
  const row = { name: 'relay', calls: 100, frequency: 4000, split };
  const table = splitTable([row]);
  assert.match(table, /\| kernel \| 8840 \|/);
  assert.match(table, /\| proxy code \| 583 \|/);
  assert.match(table, /\| libraries \| 100 \|/);
  assert.match(table, /\| \*\*total\*\* \| 11198 \|/);
  assert.match(topTable(row), /\| JS:\*decode \/work\/main\/sidecar\/dist\/rpcscope.cjs:298:25225 \| proxy code \| 583 \|/);
});
