// `npm run demo -- --duration 25 --no-ui`, run as a user runs it: the summary's
// figures, read from the sidecars' /metrics, against the traffic script's own
// tallies of every call; and nothing left running once it has exited.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import '../../test/support/sidecar-process.ts';
import type { StorySummary } from '../src/story-summary.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

/** Processes whose environment carries `mark`: the demo's children inherit it. */
async function processesMarked(mark: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const env = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
    if (env.includes(mark)) found.push(Number(pid));
  }
  return found;
}

let dir: string;
let stdout = '';
let stderr = '';
let code: number | null;
let summary: StorySummary;
const mark = `RPCSCOPE_DEMO_TEST=${randomUUID()}`;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rpcscope-demo-'));
  const json = join(dir, 'summary.json');
  // 25 s: the rollout of three sidecars took up to 9 s on a loaded 2-core machine,
  // and the healed stretch after it must still hold a few seconds of calls.
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--duration', '25', '--no-ui', '--no-page', '--summary-json', json], {
    env: { ...process.env, [mark.split('=')[0]!]: mark.split('=')[1]! },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  code = await new Promise((r) => child.once('exit', r));
  summary = JSON.parse(await readFile(json, 'utf8')) as StorySummary;
});

after(() => rm(dir, { recursive: true, force: true }));

test('the demo exits 0 with the summary only, and leaves no process behind', async () => {
  assert.equal(code, 0, stderr);
  assert.match(stdout, /^\nrpcscope demo: 2\d s, \d+ calls by the traffic script\n/);
  for (const heading of ['GetOrder by protocol', 'gRPC against REST:', 'Migration rehearsal', 'split (--split order.v1.OrderService/GetOrder=30): ', 'shadow (--shadow to v2): ', 'v2 differs in GetOrder: ', 'Pinned pod: ', 'after --max-connection-age 1s (rolled out by ', 'Balanced client:', 'Resets by side and code:', 'Deadline misses:']) {
    assert.ok(stdout.includes(heading), `the summary has "${heading}":\n${stdout}`);
  }
  assert.deepEqual(await processesMarked(mark), []);
});

test('GetOrder compared over every protocol: the calls the sidecars counted are the calls the script made', () => {
  const protocols = summary.rpcscope.comparison.map((c) => c.protocol).sort();
  assert.deepEqual(protocols, ['connect', 'grpc', 'grpc_web', 'rest', 'trpc']);
  for (const c of summary.rpcscope.comparison) {
    const { calls: made, answered } = summary.script.comparison[c.protocol]!;
    // Every call a pod answered went through its sidecar, so it is counted (the
    // demo reads each sidecar up to its exit at the rollout). A call that got no
    // answer may have been cut before reaching a sidecar (a connection closed
    // by the rollout) or inside it (a missed deadline): either is possible.
    assert.ok(c.calls >= answered && c.calls <= made, `${c.protocol}: rpcscope counted ${c.calls}; the script made ${made}, of which pods answered ${answered}`);
    assert.ok(c.p50 > 0 && c.p99 >= c.p50, `${c.protocol}: p50 ${c.p50}, p99 ${c.p99}`);
  }
  const bytes = Object.fromEntries(summary.rpcscope.comparison.map((c) => [c.protocol, c.responseBytes]));
  assert.ok(bytes.grpc! < bytes.rest!, `the order is smaller in protobuf (${bytes.grpc} B) than in JSON (${bytes.rest} B)`);
});

test("the pinned pod is the one the script's gRPC connection sat on, and its skew heals after the remedy", () => {
  const { pinned, windows } = summary.rpcscope;
  assert.equal(pinned.pod, summary.script.pinnedPod);
  assert.ok(windows.rolledOutS !== null && windows.after[1] - windows.after[0] >= 2, `a healed stretch of 2 s at least: ${JSON.stringify(windows)}`);
  assert.ok(pinned.skewBefore >= 1.5, `skew before ${pinned.skewBefore}\n${stdout}`);
  assert.ok(pinned.skewAfter < pinned.skewBefore - 0.3, `skew after ${pinned.skewAfter} against ${pinned.skewBefore} before\n${stdout}`);
  assert.ok(Math.abs(pinned.skewBefore - summary.script.skewBefore) <= 0.3, `rpcscope ${pinned.skewBefore}, script (x-pod) ${summary.script.skewBefore}`);
  assert.ok(Math.abs(pinned.skewAfter - summary.script.skewAfter) <= 0.3, `rpcscope ${pinned.skewAfter}, script (x-pod) ${summary.script.skewAfter}`);
});

test('the balanced client spreads its calls, as its outbound sidecar and the script both see', () => {
  const { balanced } = summary.rpcscope;
  assert.ok(balanced.skew < 1.3, `balanced skew ${balanced.skew}`);
  assert.ok(Math.abs(balanced.skew - summary.script.balancedSkew) <= 0.2, `rpcscope ${balanced.skew}, script ${summary.script.balancedSkew}`);
});

test('resets, deadline misses and calls without a deadline follow what the script did', () => {
  const r = summary.rpcscope;
  assert.ok(summary.script.cancelledStreams > 0 && (r.resets['client | CANCEL'] ?? 0) > 0, `CANCEL resets ${r.resets['client | CANCEL']} for ${summary.script.cancelledStreams} cancelled streams`);
  assert.ok(r.goawaysSent > 0, 'the rollout and --max-connection-age sent GOAWAYs');
  assert.ok(r.deadlineMisses > 0 && summary.script.deadlineMisses > 0, `deadline misses: rpcscope ${r.deadlineMisses}, script ${summary.script.deadlineMisses}`);
  const { withoutDeadline, withoutDeadlineAnswered } = summary.script;
  assert.ok(r.withoutDeadline >= withoutDeadlineAnswered && r.withoutDeadline <= withoutDeadline, `without a deadline: rpcscope ${r.withoutDeadline}; the script made ${withoutDeadline}, of which pods answered ${withoutDeadlineAnswered}`);
});

test("tRPC procedures are counted under their gRPC twins' operations, one call per procedure of a batch", () => {
  for (const operation of ['GetOrder', 'ListOrders', 'CreateOrder']) {
    const counted = summary.rpcscope.calls[operation] ?? {};
    assert.ok((counted.grpc ?? 0) > 0, `${operation} has gRPC calls: ${JSON.stringify(counted)}`);
    const { calls: made, answered } = summary.script.byOperation[operation]?.trpc ?? { calls: 0, answered: 0 };
    const trpc = counted.trpc ?? 0;
    // The web app's pages batch two or three procedures in one request: each counts.
    assert.ok(trpc > 0 && trpc >= answered && trpc <= made, `${operation}: rpcscope counted ${trpc} tRPC calls; the script made ${made}, of which pods answered ${answered}`);
  }
});

test('the split sends its share of REST GetOrder calls to gRPC through the transcoder', () => {
  const { split } = summary.rpcscope.migration;
  assert.ok(split.transcoded > 0, `transcoded ${split.transcoded} of ${split.restCalls}`);
  // Counted, not random: floor(n × 30 %) of each sidecar process's n calls (three pods, each restarted once).
  assert.ok(split.transcoded <= split.restCalls * 0.3 + 0.01 && split.transcoded >= split.restCalls * 0.3 - 6, `transcoded ${split.transcoded} of ${split.restCalls} REST GetOrder calls`);
  assert.ok(split.restCalls >= summary.script.splitRestAnswered && split.restCalls <= summary.script.splitRestCalls, `REST GetOrder: rpcscope ${split.restCalls}; script ${summary.script.splitRestCalls}, answered ${summary.script.splitRestAnswered}`);
});

test('the shadow finds v2 answering GetOrder differently for some orders, and the log names the field', () => {
  const { shadow } = summary.rpcscope.migration;
  assert.ok(shadow.match > 0 && shadow.mismatch > 0, `shadow: ${shadow.match} match, ${shadow.mismatch} mismatch, ${shadow.error} error`);
  const get = shadow.byOperation.GetOrder;
  // v2 differs for shipped orders only: a quarter of the full ones.
  assert.ok(get && get.match > 0 && get.mismatch > 0, `GetOrder: ${JSON.stringify(get)}`);
  const d = shadow.differences.GetOrder;
  assert.ok(d, `a "shadow answer differs" warning for GetOrder: ${JSON.stringify(shadow.differences)}`);
  // REST answers name the JSON path; gRPC answers, compared byte for byte, a byte offset.
  assert.ok(d.fields.some((f) => f === '$.carrier' || /^body \(byte \d+\)$/.test(f)), `fields ${d.fields.join(', ')}`);
  if (d.field === '$.carrier') assert.deepEqual([d.primary, d.shadow], ['"united-parcel-ground"', '"ups-ground"']);
  assert.ok(stdout.includes(`v2 differs in GetOrder: ${d.field} `), stdout);
});
