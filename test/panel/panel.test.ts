// The built panel (grafana-plugin/dist) in headless Chromium with real @grafana/ui, fed with
// what a real Prometheus answers about recorded traffic, in each mode and both themes. It
// checks what a user reads against figures worked out here from the same Prometheus answers,
// and keeps a screenshot of each mode under .artifacts/panel/.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildPlugin, bundleHarness, serveHarness, type HarnessServer } from './harness-server.ts';
// INTERIM: swap for test/support's startRecordedStack (real sidecars, real traffic) when it lands.
import { startRecordedStack, type RecordedStack } from './interim-recorded-stack.ts';
import { beforeAfterQueries, podQueries, protocolQueries, type PanelQuery } from './panel-queries.ts';
import { queryRange, type PromApiResponse } from './prometheus.ts';

const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.artifacts', 'panel');
const CHROMIUM = process.env.RPCSCOPE_CHROMIUM ?? '/usr/bin/chromium';
const THEMES = ['dark', 'light'] as const;
type Theme = (typeof THEMES)[number];
const STEP = 1;
const MINUS = '\u2212';

interface HarnessQuery {
  refId: string;
  response: PromApiResponse;
  stepSeconds: number;
}

interface RenderSpec {
  theme: Theme;
  options: Record<string, unknown>;
  queries: HarnessQuery[];
  from: number;
  to: number;
  width: number;
  height: number;
}

/** What grafana-plugin/harness/entry.tsx puts on window. */
interface HarnessApi {
  load(url: string): Promise<string[]>;
  render(spec: RenderSpec): Promise<void>;
  themeColor(mode: Theme, path: string): string;
  colorOf(selector: string): string | null;
}

// ---- the oracle: figures from the raw Prometheus answers, formatted as a user should read them

type Labels = Record<string, string>;

function matrixOf(response: PromApiResponse) {
  if (response.data.resultType !== 'matrix') {
    throw new Error(`expected a range answer, got ${response.data.resultType}`);
  }
  return response.data.result;
}

/** The finite values of the one series whose labels include `labels`. */
function points(response: PromApiResponse, labels: Labels): number[] {
  const series = matrixOf(response).find((s) => Object.entries(labels).every(([k, v]) => s.metric[k] === v));
  assert.ok(series, `no series ${JSON.stringify(labels)}`);
  return series.values.map(([, v]) => Number(v)).filter(Number.isFinite);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const last = (xs: number[]) => xs[xs.length - 1]!;

function significant(v: number): string {
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(v))));
  return String(Number(v.toFixed(Math.min(digits, 6))));
}

const ms = (seconds: number) => `${significant(seconds * 1000)} ms`;

function relative(value: number, reference: number): { text: string; verdict: string } {
  const r = (value - reference) / reference;
  const pct = Math.abs(r) * 100;
  const digits = pct >= 10 ? String(Math.round(pct)) : pct.toFixed(1);
  const text = Number(digits) === 0 ? '0 %' : `${r < 0 ? MINUS : '+'}${digits} %`;
  // Lower is better for latency and resets; within the default 10 % it is "same".
  return { text, verdict: pct < 10 ? 'same' : r < 0 ? 'better' : 'worse' };
}

const VERDICT_COLOR: Record<string, string> = { better: 'success.text', worse: 'error.text', same: 'text.secondary' };

const calls = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (v: number) => `${(v * 100).toFixed(v < 0.1 ? 1 : 0)} %`;

function utcClock(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(11, 19);
}

// ---- the run

let stack: RecordedStack;
let server: HarnessServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

async function fetchAll(queries: PanelQuery[], start: number, end: number): Promise<HarnessQuery[]> {
  return Promise.all(
    queries.map(async (q) => ({
      refId: q.refId,
      response: await queryRange(stack.prometheusUrl, q.expr, start, end, STEP),
      stepSeconds: STEP,
    }))
  );
}

const byRefId = (queries: HarnessQuery[], refId: string) => {
  const q = queries.find((x) => x.refId === refId);
  assert.ok(q, `no query ${refId}`);
  return q.response;
};

async function render(spec: RenderSpec): Promise<void> {
  await page.evaluate((s) => (globalThis as unknown as { rpcscopeHarness: HarnessApi }).rpcscopeHarness.render(s), spec);
  await page.waitForSelector('body[data-ready="true"] [data-testid="rpcscope-panel"]');
}

async function screenshot(name: string): Promise<void> {
  await page.locator('#panel').screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}

const text = async (selector: string) => ((await page.locator(selector).first().textContent()) ?? '').trim();

async function expectColour(selector: string, theme: Theme, path: string): Promise<void> {
  const [actual, expected] = await Promise.all([
    page.evaluate((sel) => (globalThis as unknown as { rpcscopeHarness: HarnessApi }).rpcscopeHarness.colorOf(sel), selector),
    page.evaluate(([m, p]) => (globalThis as unknown as { rpcscopeHarness: HarnessApi }).rpcscopeHarness.themeColor(m, p), [
      theme,
      path,
    ] as [Theme, string]),
  ]);
  assert.equal(actual, expected, `${selector} should be coloured ${path} in the ${theme} theme`);
}

let settled: number;
let protocols: HarnessQuery[];
let beforeAfter: HarnessQuery[];
let pods: HarnessQuery[];

before(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  // The recording takes about half a minute; build, bundle and start the browser meanwhile.
  const [recorded, bundle] = await Promise.all([
    startRecordedStack(),
    buildPlugin().then(bundleHarness),
  ]);
  stack = recorded;
  server = await serveHarness(bundle);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(server.url);
  await page.waitForFunction(() => 'rpcscopeHarness' in globalThis);

  const w = stack.rateWindow;
  // A rate over the window still counts calls from before the switch until the window has
  // passed it: the "after" range starts once it has, as a user would pick it. Likewise the pods'
  // range starts one window into the recording, once every pod has a rate.
  settled = stack.switchAt + Number.parseInt(w, 10) + 1;
  const phase = stack.end - stack.switchAt;
  [protocols, beforeAfter, pods] = await Promise.all([
    fetchAll(protocolQueries(w), settled, stack.end),
    fetchAll(beforeAfterQueries(w, `${phase}s`), settled, stack.end),
    fetchAll(podQueries(w), stack.start + Number.parseInt(w, 10), stack.end),
  ]);
});

after(async () => {
  await browser?.close();
  await server?.close();
  await stack?.stop();
});

describe('the built panel in Chromium', () => {
  it('loads dist/module.js as an AMD module over the modules Grafana shares', async () => {
    const options = await page.evaluate(() => (globalThis as unknown as { rpcscopeHarness: HarnessApi }).rpcscopeHarness.load('/plugin/module.js'));
    assert.deepEqual(options.sort(), [
      'baseline',
      'bytesUnit',
      'latencyUnit',
      'metrics',
      'minCalls',
      'mode',
      'podLabel',
      'rateUnit',
      'ratioThreshold',
      'reducer',
      'relativeThreshold',
      'showSparklines',
      'skewThreshold',
    ]);
  });

  for (const theme of THEMES) {
    describe(`${theme} theme`, () => {
      it('protocols: each operation per protocol, with its change against REST', async () => {
        await render({
          theme,
          options: { mode: 'protocols', baseline: 'rest' },
          queries: protocols,
          from: settled,
          to: stack.end,
          width: 1400,
          height: 1420,
        });
        const op = 'orders.v1.OrderService/ListOrders';
        const cell = (protocol: string, metric: string) =>
          `td[data-operation="${op}"][data-protocol="${protocol}"][data-metric="${metric}"]`;

        // Busiest first: GetOrder carries the most calls after the switch.
        const rate = byRefId(protocols, 'rate');
        const busiest = ['GetOrder', 'ListOrders', 'CreateOrder']
          .map((name) => `orders.v1.OrderService/${name}`)
          .map((operation) => ({
            operation,
            total: ['grpc', 'grpc_web', 'connect', 'rest'].reduce((sum, protocol) => {
              const series = matrixOf(rate).find((s) => s.metric.operation === operation && s.metric.protocol === protocol);
              return series ? sum + mean(points(rate, { operation, protocol })) : sum;
            }, 0),
          }))
          .sort((a, b) => b.total - a.total)[0]!.operation;
        assert.equal(await page.locator('tbody[data-operation]').first().getAttribute('data-operation'), busiest);

        const header = await page.locator('thead th').allTextContents();
        assert.deepEqual(header, ['Operation', 'Metric', 'RESTbaseline', 'gRPC', 'gRPC-Web', 'Connect']);

        const p99 = byRefId(protocols, 'p99');
        const restP99 = mean(points(p99, { operation: op, protocol: 'rest' }));
        const grpcP99 = mean(points(p99, { operation: op, protocol: 'grpc' }));
        const expected = relative(grpcP99, restP99);
        assert.equal(expected.verdict, 'better', 'the recording has gRPC faster than REST');
        assert.equal(await text(cell('rest', 'p99')), ms(restP99));
        assert.equal(await text(`${cell('grpc', 'p99')} span[data-verdict]`), expected.text);
        assert.equal(await page.locator(`${cell('grpc', 'p99')} span[data-verdict]`).getAttribute('data-verdict'), 'better');
        assert.equal(
          await page.locator(`${cell('grpc', 'p99')} span[data-verdict]`).getAttribute('title'),
          `p99 ${expected.text} vs REST (better)`
        );
        await expectColour(`${cell('grpc', 'p99')} span[data-verdict]`, theme, 'success.text');
        assert.ok(await page.locator(`${cell('grpc', 'p99')} canvas`).count(), 'the cell has a sparkline');

        // Request bodies: JSON over REST is several times the protobuf over gRPC.
        const req = byRefId(protocols, 'req_bytes');
        const bytes = relative(mean(points(req, { operation: op, protocol: 'grpc' })), mean(points(req, { operation: op, protocol: 'rest' })));
        assert.equal(await text(`${cell('grpc', 'req_bytes')} span[data-verdict]`), bytes.text);
        await expectColour(`${cell('grpc', 'req_bytes')} span[data-verdict]`, theme, VERDICT_COLOR[bytes.verdict]!);

        await screenshot(`protocols-${theme}`);
      });

      it('before/after: changes across the switch, and a warning where a side has too few calls', async () => {
        const minCalls = 50;
        await render({
          theme,
          options: { mode: 'beforeAfter', metrics: ['p50', 'p99', 'errors', 'req_bytes'], minCalls },
          queries: beforeAfter,
          from: settled,
          to: stack.end,
          width: 1400,
          height: 1560,
        });
        const row = (operation: string, b: string, a: string) =>
          `tbody[data-operation="orders.v1.OrderService/${operation}"][data-protocol-before="${b}"][data-protocol-after="${a}"]`;
        const integral = (refId: string, labels: Labels) => points(byRefId(beforeAfter, refId), labels).reduce((s, v) => s + v * STEP, 0);

        // CreateOrder over gRPC got faster at the switch. The median, not p99: a p99 over a few
        // dozen calls a window swings with every deadline miss.
        const create = { operation: 'orders.v1.OrderService/CreateOrder', protocol: 'grpc' };
        const p50Before = mean(points(byRefId(beforeAfter, 'p50_before'), create));
        const p50After = mean(points(byRefId(beforeAfter, 'p50'), create));
        const change = relative(p50After, p50Before);
        assert.equal(change.verdict, 'better', `the recording has CreateOrder faster after the switch: p50 ${p50Before} → ${p50After}`);
        const createRow = row('CreateOrder', 'grpc', 'grpc');
        assert.equal(await text(`${createRow} tr[data-metric="p50"] td[data-role="before"]`), ms(p50Before));
        assert.equal(await text(`${createRow} tr[data-metric="p50"] td[data-role="after"]`), ms(p50After));
        assert.equal(await text(`${createRow} tr[data-metric="p50"] td[data-role="change"]`), change.text);
        await expectColour(`${createRow} tr[data-metric="p50"] span[data-verdict]`, theme, 'success.text');
        assert.equal(
          await text(`${createRow} [data-role="calls"]`),
          `${calls(integral('rate_before', create))} → ${calls(integral('rate', create))} calls`
        );
        assert.ok(integral('rate', create) >= minCalls && integral('rate_before', create) >= minCalls);
        assert.equal(await page.locator(`${createRow} [role="alert"]`).count(), 0);

        // GetOrder's REST callers moved away: too few REST calls after the switch to judge by.
        const rest = { operation: 'orders.v1.OrderService/GetOrder', protocol: 'rest' };
        const restAfter = integral('rate', rest);
        const restBefore = integral('rate_before', rest);
        assert.ok(restAfter < minCalls && restBefore >= minCalls, `recording: REST GetOrder ${restBefore} → ${restAfter} calls`);
        const restRow = row('GetOrder', 'rest', 'rest');
        assert.equal(await page.locator(restRow).getAttribute('data-low-calls'), 'true');
        assert.equal(
          await text(`${restRow} [role="alert"]`),
          `Too few calls (${calls(restAfter)} after; need ${minCalls}): deltas unreliable`
        );

        await screenshot(`before-after-${theme}`);
      });

      it('pods: the skew figure, the pinned pod, and when the skew began', async () => {
        await render({
          theme,
          options: { mode: 'pods', reducer: 'last' },
          queries: pods,
          from: stack.start + Number.parseInt(stack.rateWindow, 10),
          to: stack.end,
          width: 1400,
          height: 340,
        });
        const skewSeries = matrixOf(byRefId(pods, 'skew'))[0];
        assert.ok(skewSeries, 'the skew query has a series');
        const skewValues = skewSeries.values.map(([t, v]) => [t, Number(v)] as const);
        const skew = last(skewValues.map(([, v]) => v));
        assert.ok(skew >= 1.5, `the recording ends skewed (skew ${skew})`);
        assert.equal(await text('[data-role="skew-value"]'), skew.toFixed(2));
        await expectColour('[data-role="skew"]', theme, 'error.text');

        const rate = byRefId(pods, 'rate');
        const lastRates = stack.pods.map((pod) => ({ pod, rate: last(points(rate, { pod })) }));
        const total = lastRates.reduce((s, p) => s + p.rate, 0);
        const top = [...lastRates].sort((a, b) => b.rate - a.rate)[0]!;
        assert.equal(top.pod, stack.pods[0]);
        const connections = last(points(byRefId(pods, 'connections'), { pod: top.pod }));
        assert.equal(
          await text('[data-role="pinned"]'),
          `Pinned: ${top.pod} takes ${pct(top.rate / total)} of calls (${significant(top.rate)}/s) over ${connections} connection${connections === 1 ? '' : 's'}`
        );
        assert.deepEqual(
          await page.locator('tr[data-pinned="true"]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-pod'))),
          [top.pod]
        );

        // The newest unbroken run of steps at or over the threshold starts at the switch, give or
        // take the rate window.
        let since = skewValues.length - 1;
        while (since > 0 && skewValues[since - 1]![1] >= 1.5) {
          since--;
        }
        const sinceAt = skewValues[since]![0];
        assert.ok(Math.abs(sinceAt - stack.switchAt) <= 6, `skew began at ${sinceAt}, switch at ${stack.switchAt}`);
        assert.equal(await text('[data-role="since"]'), `Skew ≥ 1.5 since ${utcClock(sinceAt)}`);

        await screenshot(`pods-${theme}`);
      });
    });
  }

  it('raised no error in the page', () => {
    assert.deepEqual(pageErrors, []);
  });
});
