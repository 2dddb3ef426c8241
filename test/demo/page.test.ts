// The demo's panel page in headless Chromium (playwright-core, Debian's
// chromium), as a user opens it from the address the demo prints: the built
// panel in its three modes on live Prometheus data, with screenshots under
// .artifacts/demo/. Then Ctrl-C, which must leave nothing running.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { eventually } from '../support/eventually.ts';
import '../support/sidecar-process.ts';
import { cachedHarnessBundle } from '../../demo/src/harness-bundle-cache.ts';

const MAIN = fileURLToPath(new URL('../../demo/src/main.ts', import.meta.url));
const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.artifacts', 'demo');
const CHROMIUM = process.env.RPCSCOPE_CHROMIUM ?? '/usr/bin/chromium';
const MARK = randomUUID();

let demo: ChildProcess;
let stdout = '';
let browser: Browser;
let page: Page;

async function processesMarked(): Promise<number[]> {
  const found: number[] = [];
  for (const pid of await readdir('/proc')) {
    if (/^\d+$/.test(pid) && (await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '')).includes(MARK)) found.push(Number(pid));
  }
  return found;
}

/** The frame of one mode once it has rendered at least `renders` times. */
async function frameOf(mode: string, renders: number): Promise<Frame> {
  // The frames attach as the page loads them, while the demo builds their bundle.
  const frame = await eventually(() => page.frame({ url: (u: URL) => u.search === `?mode=${mode}` }) ?? undefined, `the page has the ${mode} frame`, 90_000);
  // Runs in the page: its document is the browser's.
  const rendered = (n: number): boolean => Number((globalThis as unknown as { document: { body: { dataset: Record<string, string | undefined> } } }).document.body.dataset.renders ?? 0) >= n;
  await frame.waitForFunction(rendered, renders, { timeout: 90_000 });
  return frame;
}

before(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  // The demo builds the panel page's bundle once and caches it; built here
  // first, so that on a fresh checkout the build (a minute on a busy machine)
  // does not count against the demo's wait for its page address.
  await cachedHarnessBundle();
  demo = spawn(process.execPath, ['--import', 'tsx', MAIN, '--duration', '60'], { env: { ...process.env, RPCSCOPE_DEMO_TEST: MARK }, stdio: ['ignore', 'pipe', 'inherit'] });
  demo.stdout!.on('data', (d) => (stdout += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no page address within 60 s:\n${stdout}`)), 60_000);
    demo.stdout!.on('data', () => {
      const m = /the panel page: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'] });
  page = await browser.newPage({ viewport: { width: 1400, height: 1600 } });
  // Not `load`: that waits for the frames, which wait for the harness bundle the demo builds meanwhile.
  await page.goto(url, { waitUntil: 'domcontentloaded' });
});

after(async () => {
  await browser?.close();
  // Ctrl-C, so the demo stops its children, even when a test failed before it.
  if (demo.exitCode === null) {
    const exited = new Promise((r) => demo.once('exit', r));
    demo.kill('SIGINT');
    await exited;
  }
});

test('the three modes show live values: the protocols table, before/after rows, the pinned pod', async () => {
  // The pinned pod first, watched for from the page's first render on: it shows
  // once gRPC carries the storefront (15 s of 60) and goes with the remedy (24 s).
  // Waiting for it, not sleeping a fixed time first, cannot look past that window
  // however late the page came up or however slowly the frames render (every 5 s).
  const pods = await frameOf('pods', 1);
  // Runs in the page: one reading of its document, so the sentence and the rows are from the same render.
  const pinnedNow = (): { sentence: string; rows: number } | false => {
    const doc = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null; querySelectorAll(s: string): { length: number } } }).document;
    const rows = doc.querySelectorAll('tr[data-pinned="true"]').length;
    return rows > 0 && { sentence: doc.querySelector('[data-role="pinned"]')?.textContent ?? '', rows };
  };
  const pinned = (await (await pods.waitForFunction(pinnedNow, undefined, { timeout: 90_000, polling: 250 })).jsonValue()) as { sentence: string; rows: number };
  const at = [...stdout.matchAll(/^\[\s*(\d+) s\]/gm)].at(-1)?.[1] ?? '?';
  assert.match(pinned.sentence, /^Pinned: orders-\d takes \d+ % of calls/, `at ${at} s of the demo`);
  assert.equal(pinned.rows, 1, `one pinned row at ${at} s of the demo`);
  await page.locator('#pods').screenshot({ path: join(ARTIFACTS, 'pods.png') });

  // The protocols table once it has values for gRPC and tRPC beside REST (the frames render every 5 s).
  const protocols = await frameOf('protocols', 1);
  const cell = (protocol: string): string => `td[data-protocol="${protocol}"][data-metric="p99"]`;
  await protocols.locator(cell('grpc')).first().filter({ hasText: /\d/ }).waitFor({ timeout: 90_000 });
  await protocols.locator(cell('trpc')).first().filter({ hasText: /\d/ }).waitFor({ timeout: 90_000 });
  const headers = await protocols.locator('thead th').allTextContents();
  assert.ok(headers.includes('RESTbaseline') && headers.includes('gRPC'), `protocol columns: ${headers.join(', ')}`);
  assert.match((await protocols.locator(cell('grpc')).first().textContent()) ?? '', /\d+(\.\d+)? (ms|µs|s)/);
  // The web app's tRPC procedures share the operations of their gRPC twins: a column beside them.
  assert.ok(headers.some((h) => /trpc/i.test(h)), `a tRPC column: ${headers.join(', ')}`);
  assert.match((await protocols.locator(cell('trpc')).first().textContent()) ?? '', /\d+(\.\d+)? (ms|µs|s)/);

  // A before/after row needs enough calls in both halves of the run so far; on a
  // slow first run that may take a few more renders.
  const beforeAfter = await frameOf('beforeAfter', 2);
  await beforeAfter.locator('tbody[data-operation]').first().waitFor({ timeout: 30_000 });
  const rows = await beforeAfter.locator('tbody[data-operation]').evaluateAll((els: Array<{ getAttribute(name: string): string | null }>) => els.map((e) => `${e.getAttribute('data-protocol-before')}->${e.getAttribute('data-protocol-after')}`));
  assert.ok(rows.length > 0, 'before/after has rows');

  await page.screenshot({ path: join(ARTIFACTS, 'page.png'), fullPage: true });
  for (const mode of ['protocols', 'beforeAfter']) await page.locator(`#${mode}`).screenshot({ path: join(ARTIFACTS, `${mode}.png`) });
});

test('the migration block shows the split and the shadow at work', async () => {
  const block = page.locator('#migration');
  // Refreshed every 2 s from the sidecars; by now the split and the shadow have had many calls.
  await page.waitForFunction(
    () => {
      const d = (globalThis as unknown as { document: { getElementById(id: string): { dataset: Record<string, string | undefined> } | null } }).document.getElementById('migration')?.dataset;
      return Number(d?.transcoded ?? 0) > 0 && Number(d?.match ?? 0) > 0 && Number(d?.mismatch ?? 0) > 0 && (d?.fields ?? '') !== '';
    },
    undefined,
    { timeout: 30_000 },
  );
  const text = (await block.textContent()) ?? '';
  assert.match(text, /split \(--split order\.v1\.OrderService\/GetOrder=30\): [1-9]\d* of \d+ REST GetOrder calls/);
  assert.match(text, /shadow \(--shadow to v2\): [1-9]\d* match, [1-9]\d* mismatch/);
  assert.match(text, /v2 differs in GetOrder: /);
  await block.screenshot({ path: join(ARTIFACTS, 'migration.png') });
});

test('after the rollout of --max-connection-age the pods mode shows no pinned pod', async () => {
  // The remedy starts at 24 s of 60 and takes a few seconds; the frames render every 5 s.
  // Given until past the demo's end (60 s of its own): this test may start well before
  // the remedy, now that the first one stops waiting as soon as it has seen the pinned pod.
  const pods = await frameOf('pods', 1);
  await pods.locator('tr[data-pinned="true"]').waitFor({ state: 'detached', timeout: 90_000 });
  assert.equal(await pods.locator('tr[data-pod]').count(), 3, 'every pod still has a row');
  await page.locator('#pods').screenshot({ path: join(ARTIFACTS, 'pods-healed.png') });
});

test('Ctrl-C ends the demo with its summary and leaves no process behind', async () => {
  const exited = new Promise<number | null>((r) => demo.once('exit', r));
  demo.kill('SIGINT');
  assert.equal(await exited, 0);
  assert.match(stdout, /Pinned pod: orders-\d/);
  assert.deepEqual(await processesMarked(), []);
});
