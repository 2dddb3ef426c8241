// The built panel in headless Chromium with real @grafana/ui, loaded from its archive unpacked
// into a plugins directory as Grafana installs it (test/panel/plugin-zip.ts), fed with
// what a real Prometheus answers about real traffic through real sidecars
// (test/support/recorded-stack.ts), in each mode and both themes. It checks what a user reads
// against figures worked out here from the same Prometheus answers, and keeps a screenshot of
// each mode under .artifacts/panel/.
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startPrometheus, type RunningPrometheus } from '../support/prometheus.ts';
import { startRecordedStack, type RecordedStack } from '../support/recorded-stack.ts';
import { buildPlugin, bundleHarness, PLUGINS_PATH, serveHarness, type HarnessServer } from './harness-server.ts';
import { startMigrationPods, type MigrationPods } from './migration-pods.ts';
import { pluginZip, unpackIntoPluginsDir } from './plugin-zip.ts';
import { beforeAfterQueries, podQueries, protocolQueries, transcodedQueries, type PanelQuery } from './panel-queries.ts';
import { queryRange, type PromApiResponse } from './prometheus.ts';

const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.artifacts', 'panel');
const CHROMIUM = process.env.RPCSCOPE_CHROMIUM ?? '/usr/bin/chromium';
const THEMES = ['dark', 'light'] as const;
type Theme = (typeof THEMES)[number];
const STEP = 1;
/** As Grafana's $__rate_interval for a 1 s scrape interval. */
const RATE_WINDOW = '4s';
/** Each of the before/after ranges; the protocols and pods ranges span both. */
const HALF = 10;
const MINUS = '\u2212';
const PROTOCOL_ORDER = ['rest', 'grpc', 'grpc_web', 'connect', 'trpc'];
const PROTOCOL_NAMES: Record<string, string> = { grpc: 'gRPC', grpc_web: 'gRPC-Web', connect: 'Connect', rest: 'REST', trpc: 'tRPC' };
/** @grafana/e2e-selectors' components.Panels.Panel.PanelDataErrorMessage, on Grafana's empty state. */
const PANEL_DATA_ERROR_MESSAGE = 'data-testid Panel data error message';

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
type Matrix = Array<{ metric: Labels; values: Array<[number, string]> }>;

function matrixOf(response: PromApiResponse): Matrix {
  if (response.data.resultType !== 'matrix') {
    throw new Error(`expected a range answer, got ${response.data.resultType}`);
  }
  return response.data.result;
}

const matches = (metric: Labels, labels: Labels) => Object.entries(labels).every(([k, v]) => metric[k] === v);

/** The finite values of the series whose labels include `labels`; empty when there is none. */
function points(response: PromApiResponse, labels: Labels): number[] {
  const series = matrixOf(response).find((s) => matches(s.metric, labels));
  return (series?.values ?? []).map(([, v]) => Number(v)).filter(Number.isFinite);
}

const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
const last = (xs: number[]) => (xs.length === 0 ? null : xs[xs.length - 1]!);

/** Calls behind a rate series: each point one step of calls, as the panel counts them. */
function callsOf(response: PromApiResponse, labels: Labels, rangeSeconds: number): number | null {
  const series = matrixOf(response).find((s) => matches(s.metric, labels));
  if (!series) {
    return null;
  }
  const times = series.values.map(([t]) => t);
  let step = Infinity;
  for (let i = 1; i < times.length; i++) {
    step = Math.min(step, times[i]! - times[i - 1]!);
  }
  const seconds = Number.isFinite(step) ? step : rangeSeconds;
  return series.values.reduce((sum, [, v]) => (Number.isFinite(Number(v)) ? sum + Number(v) * seconds : sum), 0);
}

function significant(v: number): string {
  if (v === 0) {
    return '0';
  }
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(v))));
  return String(Number(v.toFixed(Math.min(digits, 6))));
}

function latency(seconds: number): string {
  if (seconds !== 0 && Math.abs(seconds) < 0.001) {
    return `${significant(seconds * 1e6)} µs`;
  }
  return Math.abs(seconds) < 1 ? `${significant(seconds * 1000)} ms` : `${significant(seconds)} s`;
}

/** The panel's delta for a lower-is-better metric at the default 10 % threshold. */
function relative(value: number, reference: number): { text: string; verdict: string } {
  const r = (value - reference) / reference;
  const pct = Math.abs(r) * 100;
  const digits = pct >= 10 ? String(Math.round(pct)) : pct.toFixed(1);
  const text = Number(digits) === 0 ? '0 %' : `${r < 0 ? MINUS : '+'}${digits} %`;
  return { text, verdict: r === 0 || pct < 10 ? 'same' : r < 0 ? 'better' : 'worse' };
}

/** The panel's change of a ratio in percentage points, at the default 0.5 pp threshold. */
function points_(value: number, reference: number): { text: string; verdict: string } {
  const d = value - reference;
  const pp = Math.abs(d) * 100;
  const digits = pp >= 10 ? pp.toFixed(1) : pp.toFixed(2);
  const text = Number(digits) === 0 ? '0 pp' : `${d < 0 ? MINUS : '+'}${digits} pp`;
  return { text, verdict: d === 0 || pp < 0.5 ? 'same' : d < 0 ? 'better' : 'worse' };
}

interface Change {
  label: string;
  text: string;
  /** Thresholds spanned: |relative| / 10 %, |points| / 0.5 pp. */
  score: number;
}

const HEADLINE_METRICS = [
  { refId: 'p50', label: 'p50', ratio: false },
  { refId: 'p99', label: 'p99', ratio: false },
  { refId: 'rate', label: 'calls', ratio: false },
  { refId: 'errors', label: 'errors', ratio: true },
];
/** Protocols mode ranks no call volume: how many calls a protocol carries says nothing about the protocol. */
const PROTOCOL_HEADLINE_METRICS = HEADLINE_METRICS.filter((m) => m.refId !== 'rate');

/** The changes past the default thresholds between two series of each metric, largest first. */
function changesOf(
  metrics: typeof HEADLINE_METRICS,
  value: (refId: string) => number | null,
  reference: (refId: string) => number | null
): Change[] {
  const out: Change[] = [];
  for (const m of metrics) {
    const v = value(m.refId);
    const r = reference(m.refId);
    if (v === null || r === null || (!m.ratio && r === 0)) {
      continue;
    }
    const score = m.ratio ? (Math.abs(v - r) * 100) / 0.5 : Math.abs((v - r) / r) / 0.1;
    const d = m.ratio ? points_(v, r) : relative(v, r);
    if (d.verdict !== 'same') {
      out.push({ label: m.label, text: d.text, score });
    }
  }
  return out.sort((a, b) => b.score - a.score).slice(0, 3);
}

const VERDICT_COLOR: Record<string, string> = { better: 'success.text', worse: 'error.text', same: 'text.secondary' };

const calls = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (v: number) => `${(v * 100).toFixed(v < 0.1 ? 1 : 0)} %`;
const utcClock = (seconds: number) => new Date(seconds * 1000).toISOString().slice(11, 19);

// ---- the run

let stack: RecordedStack;
/** The tRPC and transcoding pods, and a Prometheus scraping them beside the stack's pods. */
let migration: MigrationPods;
let prometheus: RunningPrometheus;
let server: HarnessServer;
/** The plugin's id, the folder its archive unpacks to. */
let pluginId: string;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];
/** Unix seconds: the recording the panel is shown, and the boundary between before and after. */
let start: number;
let middle: number;
let end: number;
let protocols: HarnessQuery[];
let beforeAfter: HarnessQuery[];
let pods: HarnessQuery[];
let transcoded: HarnessQuery[];

async function fetchAll(queries: PanelQuery[], from: number, to: number, url = prometheus.url): Promise<HarnessQuery[]> {
  return Promise.all(
    queries.map(async (q) => ({
      refId: q.refId,
      response: await queryRange(url, q.expr, from, to, STEP),
      stepSeconds: STEP,
    }))
  );
}

const byRefId = (queries: HarnessQuery[], refId: string) => {
  const q = queries.find((x) => x.refId === refId);
  assert.ok(q, `no query ${refId}`);
  return q.response;
};

type Harness = { rpcscopeHarness: HarnessApi };

async function render(spec: RenderSpec): Promise<void> {
  await page.evaluate((s) => (globalThis as unknown as Harness).rpcscopeHarness.render(s), spec);
  await page.waitForSelector('body[data-ready="true"] [data-testid="rpcscope-panel"]');
}

/** Whether the element shows inside the panel's own box without scrolling it. */
async function inPanelView(selector: string): Promise<boolean> {
  const [panel, el] = await Promise.all([page.locator('[data-testid="rpcscope-panel"]').boundingBox(), page.locator(selector).first().boundingBox()]);
  assert.ok(panel && el, `${selector} is laid out`);
  return el.y >= panel.y && el.y + el.height <= panel.y + panel.height + 0.5;
}

async function screenshot(name: string): Promise<void> {
  await page.locator('#panel').screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}

const text = async (selector: string) => ((await page.locator(selector).first().textContent()) ?? '').trim();

async function expectColour(selector: string, theme: Theme, path: string): Promise<void> {
  const [actual, expected] = await Promise.all([
    page.evaluate((sel) => (globalThis as unknown as Harness).rpcscopeHarness.colorOf(sel), selector),
    page.evaluate(([m, p]) => (globalThis as unknown as Harness).rpcscopeHarness.themeColor(m, p), [theme, path] as [Theme, string]),
  ]);
  assert.equal(actual, expected, `${selector} should be coloured ${path} in the ${theme} theme`);
}

before(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  // Build, bundle and start the browser while the fleet records.
  // The migration pods start once the fleet is ready, so as not to slow its first rounds on a
  // busy machine; the fleet gets longer than its default to be ready for the same reason.
  const built = buildPlugin().then(async () => {
    const zip = await pluginZip();
    pluginId = zip.id;
    return Promise.all([bundleHarness(), unpackIntoPluginsDir(zip.path)]);
  });
  const ready = Promise.all([built, startRecordedStack({ readyTimeoutMs: 120_000 })]);
  const [[bundle, pluginsDir], recorded] = await ready;
  stack = recorded;
  migration = await startMigrationPods({ namespace: 'demo', service: 'orders' });
  // The protocols and before/after views read every pod; the pods view reads the stack's own
  // Prometheus, whose three pods are the ones the load sticks to.
  prometheus = await startPrometheus({ targets: [...stack.targets, ...migration.targets] });
  const allPods = stack.pods.length + migration.targets.length;
  await prometheus.waitForData(`count(sum by (pod) (rate(rpcscope_calls_total[${RATE_WINDOW}])) > 0) == ${allPods}`, 60_000);
  start = Math.ceil(Date.now() / 1000);
  middle = start + HALF;
  end = middle + HALF;
  server = await serveHarness(bundle, pluginsDir);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  // Parsing the 22 MB harness bundle on a machine busy with five sidecars, two Prometheus servers
  // and their traffic can take longer than playwright's 30 s default.
  page.setDefaultTimeout(180_000);
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(server.url);
  await page.waitForFunction(() => 'rpcscopeHarness' in globalThis);

  // Every pod scraped past the end of the recording.
  await Promise.all([
    stack.prometheus.waitForData(`count(timestamp(up) >= ${end + 1}) == ${stack.pods.length}`, (HALF * 2 + 30) * 1000),
    prometheus.waitForData(`count(timestamp(up) >= ${end + 1}) == ${allPods}`, (HALF * 2 + 30) * 1000),
  ]);
  [protocols, beforeAfter, pods, transcoded] = await Promise.all([
    fetchAll(protocolQueries(RATE_WINDOW), start, end),
    fetchAll(beforeAfterQueries(RATE_WINDOW, `${HALF}s`), middle, end),
    fetchAll(podQueries(RATE_WINDOW), start, end, stack.prometheusUrl),
    fetchAll(transcodedQueries(RATE_WINDOW), start, end),
  ]);
});

after(async () => {
  await browser?.close();
  await server?.close();
  await prometheus?.stop();
  await Promise.all([stack?.stop(), migration?.stop()]);
});

describe('the built panel in Chromium, over real sidecars carrying traffic', () => {
  it("loads module.js from the unpacked archive's plugin folder through SystemJS over the modules Grafana shares", async () => {
    const url = `${PLUGINS_PATH}${pluginId}/module.js`;
    const options = await page.evaluate((u) => (globalThis as unknown as Harness).rpcscopeHarness.load(u), url);
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
      'sortBy',
    ]);
  });

  for (const theme of THEMES) {
    describe(`${theme} theme`, () => {
      it('protocols: each operation per protocol, with its change against REST', async () => {
        await render({ theme, options: { mode: 'protocols', baseline: 'rest' }, queries: protocols, from: start, to: end, width: 1400, height: 1800 });

        const seen = new Set(protocols.flatMap((q) => matrixOf(q.response).map((s) => s.metric.protocol ?? '')));
        const columns = PROTOCOL_ORDER.filter((p) => seen.has(p));
        assert.ok(seen.has('trpc'), 'the recording holds tRPC series');
        assert.equal(columns.at(-1), 'trpc', 'tRPC is the last column, after REST and the gRPC family');
        assert.deepEqual(await page.locator('thead th').allTextContents(), [
          'Operation',
          'Metric',
          ...columns.map((p) => (p === 'rest' ? 'RESTbaseline' : PROTOCOL_NAMES[p]!)),
        ]);

        // Busiest operation first.
        const rate = byRefId(protocols, 'rate');
        const totals = new Map<string, number>();
        for (const s of matrixOf(rate)) {
          const m = mean(points(rate, s.metric));
          if (s.metric.operation && m !== null) {
            totals.set(s.metric.operation, (totals.get(s.metric.operation) ?? 0) + m);
          }
        }
        const busiest = [...totals.entries()].sort((a, b) => b[1] - a[1])[0]![0];
        assert.equal(await page.locator('tbody[data-operation]').first().getAttribute('data-operation'), busiest);

        // Its p99 over each protocol, against REST's.
        const cell = (protocol: string, metric: string) =>
          `td[data-operation="${busiest}"][data-protocol="${protocol}"][data-metric="${metric}"]`;
        const p99 = byRefId(protocols, 'p99');
        const restP99 = mean(points(p99, { operation: busiest, protocol: 'rest' }));
        assert.ok(restP99 !== null, `REST carries ${busiest}`);
        assert.equal(await text(cell('rest', 'p99')), latency(restP99));
        let compared = 0;
        for (const protocol of columns.filter((p) => p !== 'rest')) {
          const value = mean(points(p99, { operation: busiest, protocol }));
          if (value === null) {
            continue;
          }
          const expected = relative(value, restP99);
          const delta = `${cell(protocol, 'p99')} span[data-verdict]`;
          assert.equal(await text(cell(protocol, 'p99')), `${latency(value)}${expected.text}`);
          assert.equal(await page.locator(delta).getAttribute('data-verdict'), expected.verdict);
          assert.equal(await page.locator(delta).getAttribute('title'), `p99 ${expected.text} vs REST (${expected.verdict === 'same' ? 'about the same' : expected.verdict})`);
          await expectColour(delta, theme, VERDICT_COLOR[expected.verdict]!);
          assert.ok(await page.locator(`${cell(protocol, 'p99')} canvas`).count(), 'the cell has a sparkline');
          compared++;
        }
        assert.ok(compared >= 2, `p99 compared over ${compared} protocols`);

        await screenshot(`protocols-${theme}`);
      });

      it('protocols: a tRPC column for the procedures mapped onto each operation, and a transcoded column beside REST', async () => {
        await render({
          theme,
          options: { mode: 'protocols', baseline: 'rest', metrics: ['p99', 'rate'] },
          queries: [...protocols.filter((q) => q.refId === 'p99' || q.refId === 'rate'), ...transcoded],
          from: start,
          to: end,
          width: 1400,
          height: 1800,
        });
        const headers = await page.locator('thead th').evaluateAll((els) => els.map((el) => el.getAttribute('data-protocol') ?? el.getAttribute('data-column')));
        assert.equal(headers[2], 'rest');
        assert.equal(headers[3], 'transcoded', 'the transcoded column stands beside REST');
        assert.equal(headers.at(-1), 'trpc');

        // GetOrder's tRPC p99 against REST's, as the recording has them.
        const operation = 'order.v1.OrderService/GetOrder';
        const p99 = byRefId(protocols, 'p99');
        const rest = mean(points(p99, { operation, protocol: 'rest' }));
        const trpc = mean(points(p99, { operation, protocol: 'trpc' }));
        assert.ok(rest !== null && trpc !== null, 'GetOrder has a p99 over REST and over tRPC');
        const trpcCell = `td[data-operation="${operation}"][data-protocol="trpc"][data-metric="p99"]`;
        assert.equal(await text(trpcCell), `${latency(trpc)}${relative(trpc, rest).text}`);
        assert.equal(await page.locator(`${trpcCell} span[data-verdict]`).getAttribute('title'), `p99 ${relative(trpc, rest).text} vs REST (${relative(trpc, rest).verdict === 'same' ? 'about the same' : relative(trpc, rest).verdict})`);

        // Its transcoded calls and their share of its REST calls (over every pod's REST calls).
        const translated = mean(points(byRefId(transcoded, 'transcoded'), { operation }));
        const restRate = mean(points(byRefId(protocols, 'rate'), { operation, protocol: 'rest' }));
        assert.ok(translated !== null && translated > 0 && restRate !== null, 'the transcoding pod served GetOrder');
        const cell = `td[data-column="transcoded"][data-operation="${operation}"]`;
        assert.equal(await text(`${cell} [data-role="transcoded-rate"]`), `${significant(translated)}/s`);
        assert.equal(await text(`${cell} [data-role="transcoded-share"]`), `${(Math.min(1, translated / restRate) * 100).toFixed(2)}% of REST`);
        const p50 = mean(points(byRefId(transcoded, 'translation_p50'), {}));
        const p99t = mean(points(byRefId(transcoded, 'translation_p99'), {}));
        assert.ok(p50 !== null && p99t !== null);
        assert.equal(await text('[data-role="translation-time"]'), `translation p50 ${latency(p50)}, p99 ${latency(p99t)}`);
        await screenshot(`protocols-trpc-transcoded-${theme}`);
      });

      for (const height of [350, 1800]) {
        it(`protocols at ${height} px: the headline names each operation's largest differences against REST`, async () => {
          const minCalls = 50;
          const metrics = HEADLINE_METRICS.map((m) => m.refId);
          await render({ theme, options: { mode: 'protocols', baseline: 'rest', metrics, minCalls }, queries: protocols, from: start, to: end, width: 1400, height });

          const range = end - start;
          const value = (operation: string, protocol: string) => (refId: string) =>
            mean(points(byRefId(protocols, refId), { operation, protocol }));
          const callsFor = (operation: string, protocol: string) => callsOf(byRefId(protocols, 'rate'), { operation, protocol }, range) ?? 0;
          const operations = [...new Set(matrixOf(byRefId(protocols, 'rate')).map((x) => x.metric.operation!))];
          const verdicts: Array<{ sentence: string; score: number; operation: string; top: Change }> = [];
          for (const operation of operations) {
            if (callsFor(operation, 'rest') < minCalls) {
              continue;
            }
            let best: { sentence: string; score: number; operation: string; top: Change } | null = null;
            for (const protocol of PROTOCOL_ORDER.filter((p) => p !== 'rest')) {
              if (callsFor(operation, protocol) < minCalls) {
                continue;
              }
              const changes = changesOf(PROTOCOL_HEADLINE_METRICS, value(operation, protocol), value(operation, 'rest'));
              if (changes.length > 0 && (!best || changes[0]!.score > best.score)) {
                const list = changes.map((c) => `${c.label} ${c.text}`).join(', ');
                best = { sentence: `${operation}: ${PROTOCOL_NAMES[protocol]} ${list} vs REST`, score: changes[0]!.score, operation, top: changes[0]! };
              }
            }
            if (best) {
              verdicts.push(best);
            }
          }
          verdicts.sort((a, b) => b.score - a.score || a.operation.localeCompare(b.operation));
          assert.ok(verdicts.length > 0, 'some protocol differs from REST past the thresholds');
          assert.deepEqual(
            (await page.locator('[data-role="verdict"]').allTextContents()).map((t) => t.trim()),
            verdicts.slice(0, 3).map((v) => v.sentence)
          );
          assert.equal(await text('[data-role="headline-figure"] span'), verdicts[0]!.top.text);
          // The table follows the headline's order.
          assert.equal(await page.locator('tbody[data-operation]').first().getAttribute('data-operation'), verdicts[0]!.operation);

          // The answer and the first rows of the table fit the panel; the rest scrolls inside it.
          await screenshot(`protocols-${height}-${theme}`);
          assert.ok(await inPanelView('[data-role="headline"]'), 'the headline shows without scrolling');
          assert.ok(await inPanelView('tbody[data-operation] tr'), 'the first table row shows without scrolling');
        });
      }

      it('before/after at 350 px: the headline names the largest changes with enough calls, the rest folded', async () => {
        const minCalls = 50;
        const metrics = HEADLINE_METRICS.map((m) => m.refId);
        await render({ theme, options: { mode: 'beforeAfter', metrics, minCalls }, queries: beforeAfter, from: middle, to: end, width: 1400, height: 350 });
        const folded = await page.locator('tbody[data-low-calls="true"]').count();
        assert.equal(folded, 0, 'rows with too few calls start folded');
        await page.locator('[data-role="few-calls-toggle"]').click();
        const rows = await page.locator('tbody[data-operation]').evaluateAll((els) =>
          els.map((el) => ({ operation: el.getAttribute('data-operation') ?? '', before: el.getAttribute('data-protocol-before') ?? '', after: el.getAttribute('data-protocol-after') ?? '' }))
        );
        const changed: Array<{ sentence: string; score: number; operation: string }> = [];
        let few = 0;
        for (const row of rows) {
          const nb = row.before ? (callsOf(byRefId(beforeAfter, 'rate_before'), { operation: row.operation, protocol: row.before }, HALF) ?? 0) : 0;
          const na = row.after ? (callsOf(byRefId(beforeAfter, 'rate'), { operation: row.operation, protocol: row.after }, HALF) ?? 0) : 0;
          if (nb < minCalls || na < minCalls) {
            few++;
            continue;
          }
          const changes = changesOf(
            HEADLINE_METRICS,
            (refId) => mean(points(byRefId(beforeAfter, refId), { operation: row.operation, protocol: row.after })),
            (refId) => mean(points(byRefId(beforeAfter, `${refId}_before`), { operation: row.operation, protocol: row.before }))
          );
          if (changes.length === 0) {
            continue;
          }
          const path = row.before === row.after ? PROTOCOL_NAMES[row.after]! : `${PROTOCOL_NAMES[row.before]} → ${PROTOCOL_NAMES[row.after]}`;
          const [first, ...rest] = changes.map((c) => `${c.label} ${c.text}`);
          changed.push({ sentence: [`${first} for ${row.operation} (${path})`, ...rest].join(', '), score: changes[0]!.score, operation: row.operation });
        }
        changed.sort((a, b) => b.score - a.score || a.operation.localeCompare(b.operation));
        assert.ok(changed.length > 0 && few > 0, `changes with enough calls (${changed.length}) and rows folded away (${few})`);
        assert.equal(
          await text('[data-role="few-calls-toggle"]'),
          `▾ ${few} row${few === 1 ? '' : 's'} with too few calls (under ${minCalls} on a side)`
        );
        assert.deepEqual(
          (await page.locator('[data-role="headline-change"]').allTextContents()).map((t) => t.trim()),
          changed.slice(0, 3).map((c) => c.sentence)
        );
        // As a dashboard first shows it: rendered afresh, folded, not scrolled (unfolding
        // above scrolled the table to reach the toggle).
        await render({ theme, options: { mode: 'beforeAfter', metrics, minCalls }, queries: beforeAfter, from: middle, to: end, width: 1400, height: 350 });
        await screenshot(`before-after-350-${theme}`);
        assert.ok(await inPanelView('[data-role="headline"]'), 'the headline shows without scrolling');
        assert.ok(await inPanelView('tbody[data-operation] tr'), 'the first table row shows without scrolling');
      });

      it('before/after: changes between two ranges, and a warning where a side has too few calls', async () => {
        const minCalls = 50;
        await render({
          theme,
          options: { mode: 'beforeAfter', metrics: ['p50', 'p99', 'errors', 'req_bytes'], minCalls },
          queries: beforeAfter,
          from: middle,
          to: end,
          width: 1400,
          height: 1900,
        });
        await page.locator('[data-role="few-calls-toggle"]').click();
        const rows = await page.locator('tbody[data-operation]').evaluateAll((els) =>
          els.map((el) => ({
            operation: el.getAttribute('data-operation') ?? '',
            before: el.getAttribute('data-protocol-before') ?? '',
            after: el.getAttribute('data-protocol-after') ?? '',
            low: el.getAttribute('data-low-calls') === 'true',
          }))
        );
        assert.ok(rows.length > 0);

        // Each row's calls on both sides, and the warning exactly where either side is short.
        const lows = { yes: 0, no: 0 };
        for (const row of rows) {
          const selector = `tbody[data-operation="${row.operation}"][data-protocol-before="${row.before}"][data-protocol-after="${row.after}"]`;
          const nb = row.before ? (callsOf(byRefId(beforeAfter, 'rate_before'), { operation: row.operation, protocol: row.before }, HALF) ?? 0) : null;
          const na = row.after ? (callsOf(byRefId(beforeAfter, 'rate'), { operation: row.operation, protocol: row.after }, HALF) ?? 0) : null;
          assert.equal(await text(`${selector} [data-role="calls"]`), `${nb === null ? '–' : calls(nb)} → ${na === null ? '–' : calls(na)} calls`);
          const low = (nb ?? 0) < minCalls || (na ?? 0) < minCalls;
          assert.equal(row.low, low, `${row.operation} ${row.before} → ${row.after}: ${nb} → ${na} calls`);
          assert.equal(await page.locator(`${selector} [role="alert"]`).count(), low ? 1 : 0);
          lows[low ? 'yes' : 'no']++;
        }
        assert.ok(lows.yes > 0 && lows.no > 0, `the traffic gives rows on both sides of ${minCalls} calls: ${JSON.stringify(lows)}`);

        // The busiest row (first) with both sides: its median before, after, and the change.
        const first = rows.find((r) => r.before && r.after && !r.low);
        assert.ok(first);
        const labels = { operation: first.operation, protocol: first.after };
        const b = mean(points(byRefId(beforeAfter, 'p50_before'), { operation: first.operation, protocol: first.before }));
        const a = mean(points(byRefId(beforeAfter, 'p50'), labels));
        assert.ok(a !== null && b !== null);
        const change = relative(a, b);
        const row = `tbody[data-operation="${first.operation}"][data-protocol-before="${first.before}"][data-protocol-after="${first.after}"] tr[data-metric="p50"]`;
        assert.equal(await text(`${row} td[data-role="before"]`), latency(b));
        assert.equal(await text(`${row} td[data-role="after"]`), latency(a));
        assert.equal(await text(`${row} td[data-role="change"]`), change.text);
        await expectColour(`${row} span[data-verdict]`, theme, VERDICT_COLOR[change.verdict]!);

        await screenshot(`before-after-${theme}`);
      });

      it('pods: the skew figure, the pinned pod, and since when the load has been skewed', async () => {
        await render({ theme, options: { mode: 'pods', reducer: 'last' }, queries: pods, from: start, to: end, width: 1400, height: 340 });

        const skewSeries = matrixOf(byRefId(pods, 'skew'))[0];
        assert.ok(skewSeries, 'the skew query has a series');
        const skewAt = new Map(skewSeries.values.map(([t, v]) => [t, Number(v)]));
        const skew = last(skewSeries.values.map(([, v]) => Number(v)).filter(Number.isFinite));
        assert.ok(skew !== null && skew >= 1.5, `the recorded traffic is skewed (skew ${skew})`);
        assert.equal(await text('[data-role="skew-value"]'), skew.toFixed(2));
        await expectColour('[data-role="skew"]', theme, 'error.text');

        const rate = byRefId(pods, 'rate');
        const lastRates = stack.pods.map((pod) => ({ pod, rate: last(points(rate, { pod })) ?? 0 }));
        const total = lastRates.reduce((sum, p) => sum + p.rate, 0);
        const top = [...lastRates].sort((x, y) => y.rate - x.rate)[0]!;
        assert.equal(top.pod, stack.pods[0], 'the load sticks to the first pod');
        const connections = last(points(byRefId(pods, 'connections'), { pod: top.pod }));
        const over = connections === null ? '' : ` over ${connections} connection${connections === 1 ? '' : 's'}`;
        assert.equal(await text('[data-role="pinned"]'), `Pinned: ${top.pod} takes ${pct(top.rate / total)} of calls (${significant(top.rate)}/s)${over}`);
        assert.deepEqual(
          await page.locator('tr[data-pinned="true"]').evaluateAll((els) => els.map((el) => el.getAttribute('data-pod'))),
          [top.pod]
        );

        // The newest unbroken run of steps at or over the threshold, on the rate queries' grid.
        const grid = [...new Set(matrixOf(rate).flatMap((s) => s.values.map(([t]) => t)))].sort((x, y) => x - y);
        let newest = grid.length - 1;
        while (newest >= 0 && !Number.isFinite(skewAt.get(grid[newest]!) ?? NaN)) {
          newest--;
        }
        let since = -1;
        for (let i = newest; i >= 0 && (skewAt.get(grid[i]!) ?? NaN) >= 1.5; i--) {
          since = i;
        }
        assert.ok(since >= 0);
        const when = utcClock(grid[since]!);
        assert.equal(
          await text('[data-role="since"]'),
          since === 0 ? `Skew ≥ 1.5 for the whole range (since before ${when})` : `Skew ≥ 1.5 since ${when}`
        );

        await screenshot(`pods-${theme}`);
      });
    });
  }

  it("no traffic: Grafana's own empty state, kept apart from the help for queries the mode cannot read", async () => {
    // A range before the fleet started: the same queries, answered with no series.
    const before = start - 600;
    const idle = await fetchAll(protocolQueries(RATE_WINDOW), before, before + 2 * HALF);
    assert.ok(idle.every((q) => matrixOf(q.response).length === 0), 'Prometheus holds nothing before the fleet started');
    await render({ theme: 'dark', options: { mode: 'protocols' }, queries: idle, from: before, to: before + 2 * HALF, width: 900, height: 300 });
    assert.equal(await text(`[data-testid="${PANEL_DATA_ERROR_MESSAGE}"]`), 'No data');
    assert.equal(await page.locator('[data-role="no-traffic"]').getAttribute('data-reason'), 'no-series');
    assert.equal(await page.locator('[data-role="missing-data"]').count(), 0);
    await screenshot('no-traffic-dark');

    // The same empty answers under refIds no mode reads: a query mistake, and the help says so.
    const misnamed = idle.slice(0, 2).map((q, i) => ({ ...q, refId: String.fromCharCode(65 + i) }));
    await render({ theme: 'dark', options: { mode: 'protocols' }, queries: misnamed, from: before, to: before + 2 * HALF, width: 900, height: 300 });
    assert.equal(await page.locator(`[data-testid="${PANEL_DATA_ERROR_MESSAGE}"]`).count(), 0);
    assert.match(await text('[data-role="missing-data"]'), /^The queries \(refId A, B\) returned no data, and none has a refId this mode reads\./);
  });

  it('raised no error in the page', () => {
    assert.deepEqual(pageErrors, []);
  });
});
