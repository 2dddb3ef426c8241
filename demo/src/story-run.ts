// One run of the demo's story, from starting the fleet to the last child
// process stopped: whatever ends it (the duration, Ctrl-C, an error), every
// port and process it opened is closed before it returns.
import { writeFile } from 'node:fs/promises';
import type { DemoArgs } from './demo-args.ts';
import { BALANCED_CALLER, SPLIT, startDemoFleet, type DemoFleet } from './demo-fleet.ts';
import { DRAIN_HOLD, holdDrainOpen } from './drain-hold.ts';
import { MetricsHistory } from './metrics-history.ts';
import { startLivePage, type LivePage } from './live-page.ts';
import { podFigures } from './story-figures.ts';
import { migrationFigures, renderMigration } from './story-migration.ts';
import { diagnoseDemo, renderDiagnose, type DiagnoseOutput } from './story-diagnose.ts';
import { renderSummary, summarize } from './story-summary.ts';
import { startStoryTraffic, storyTimeline } from './story-traffic.ts';
import { renderLine, renderScreen, type ViewState } from './story-view.ts';

/** The remedy, rolled out to every pod's sidecar (a changed pod template restarts every pod). */
export const REMEDY = ['--max-connection-age', '1s', '--max-connection-age-grace', '2s'];

/**
 * The last scrape, once no sidecar holds a call open: a client can see its
 * answer a moment before its sidecar records the call's end. Bounded, so a
 * stream a sidecar never closes cannot hold the summary back.
 */
async function settle(history: MetricsHistory): Promise<void> {
  const until = Date.now() + SETTLE_MS;
  for (;;) {
    await history.scrape();
    const open = Object.values(history.gauge('rpcscope_calls_active')).reduce((a, b) => a + b, 0);
    if (open === 0 || Date.now() > until) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}
const SETTLE_MS = 3000;

export async function runStory(args: DemoArgs): Promise<number> {
  const out = process.stdout;
  const tty = out.isTTY === true && !args.noUi;
  const say = (line: string): void => {
    if (!args.noUi) out.write(`${line}\n`);
  };
  const stopping = new AbortController();
  const onSignal = (): void => stopping.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let fleet: DemoFleet | undefined;
  let page: LivePage | undefined;
  try {
    say('starting three order pods, their inbound sidecars, the TCP balancer and an outbound sidecar...');
    fleet = await startDemoFleet();
    const pods = fleet.pods.map((p) => p.name);
    const f = fleet;
    const history = new MetricsHistory(() => [
      ...f.pods.map((p) => ({ id: p.name, adminUrl: () => p.sidecar.adminUrl })),
      { id: BALANCED_CALLER, adminUrl: () => f.outbound.adminUrl },
    ]);
    for (const p of fleet.pods) say(`  ${p.name}  app ${p.app.url}  sidecar ${p.sidecar.url}  admin ${p.sidecar.adminUrl}/metrics`);
    say(`  balancer ${fleet.balancer.url} (one pod per TCP connection, round robin)  outbound sidecar ${fleet.outbound.url} (per call)`);
    say(`  the pods' sidecars: --split ${SPLIT.operation}=${SPLIT.percent} (transcoded to the pod's gRPC), --shadow ${fleet.shadow.url} (v2, sharing the pods' store)`);
    if (!args.noPage) {
      // The page is a view beside the terminal one: the story goes on without it.
      const started = await startLivePage({ targets: fleet.targets(), log: say }).catch((err: unknown) => ({ missing: `no panel page: ${err instanceof Error ? err.message : String(err)}` }));
      if ('missing' in started) say(started.missing);
      else page = started;
    }

    const timeline = storyTimeline(args.durationS * 1000);
    const traffic = startStoryTraffic({ serviceUrl: fleet.balancer.url, outboundUrl: fleet.outbound.url, timeline });
    const startedMs = Date.now();
    page?.setStart(startedMs, startedMs + timeline.remedyMs);
    const podLogs = (): string[] => f.podLogs();
    page?.setMigration(() => {
      const m = migrationFigures(history, pods, SPLIT, podLogs(), startedMs, history.latestMs());
      return { figures: m, lines: renderMigration(m) };
    });
    const view: ViewState = {
      history,
      timeline,
      startedMs,
      pods,
      outbound: BALANCED_CALLER,
      pinned: undefined,
      restarting: undefined,
      rolledOut: false,
      rolledOutMs: undefined,
      pageUrl: page?.url,
      split: SPLIT,
      podLogs,
    };
    stopping.signal.addEventListener('abort', () => traffic.stop(), { once: true });
    // Ctrl-C while the page was being prepared.
    if (stopping.signal.aborted) traffic.stop();
    if (tty) out.write('\x1b[?25l');

    const draw = (): void => {
      if (args.noUi) return;
      if (tty) out.write(`\x1b[H\x1b[2J${renderScreen(view, true)}\n`);
      else out.write(`${renderLine(view)}\n`);
    };
    let diagnosedBefore: DiagnoseOutput | undefined;
    const remedy = async (): Promise<void> => {
      // What `rpcscope diagnose` says of the pinned window, asked as the remedy begins.
      // Awaited: the pinned pod's sidecar, restarted first, must still answer its /debug/connections.
      if (page) diagnosedBefore = await diagnoseDemo(page.prometheusUrl, 'Before the remedy (the pinned window):', Date.now() - (startedMs + timeline.before[0]));
      await history.scrape();
      const before = podFigures(history, pods, startedMs + timeline.before[0], Date.now());
      view.pinned = before.top;
      const order = [...f.pods].sort((a, b) => Number(b.name === before.top) - Number(a.name === before.top));
      for (const pod of order) {
        if (stopping.signal.aborted) return;
        view.restarting = pod.name;
        // Its last counts taken while it drains, so the history misses none of its calls.
        await f.restartSidecar(pod, REMEDY, async (old) => {
          const hold = holdDrainOpen(old.url);
          await history.retire(pod.name, old.adminUrl, { held: DRAIN_HOLD, stop: () => void old.stop(), release: () => hold.release(), exited: old.exited });
        });
      }
      view.restarting = undefined;
      view.rolledOut = true;
      view.rolledOutMs = Date.now();
    };

    let remedying: Promise<void> | undefined;
    const ticker = (async () => {
      while (!stopping.signal.aborted && Date.now() - startedMs < timeline.durationMs) {
        await new Promise((r) => setTimeout(r, 1000 - ((Date.now() - startedMs) % 1000)));
        await history.scrape();
        if (remedying === undefined && Date.now() - startedMs >= timeline.remedyMs) remedying = remedy();
        draw();
      }
    })();
    await Promise.race([traffic.done, ticker]);
    traffic.stop();
    const tallies = await traffic.done;
    await ticker;
    await remedying;
    await settle(history);
    if (tty) out.write('\x1b[?25h\n');

    const summary = summarize({ history, tallies, timeline, startedMs, pods, outbound: BALANCED_CALLER, rolledOutMs: view.rolledOutMs, split: SPLIT, podLogs: podLogs() });
    out.write(`\n${renderSummary(summary)}\n`);
    if (page && diagnosedBefore && view.rolledOutMs !== undefined) {
      // After it: the healed window, against the pinned one.
      const now = Date.now();
      const healedFrom = view.rolledOutMs + 2000;
      const after = await diagnoseDemo(page.prometheusUrl, 'After the remedy (the healed window, against the pinned one):', now - healedFrom, [now - (startedMs + timeline.before[0]), now - (startedMs + timeline.remedyMs)]);
      out.write(`\n${renderDiagnose([diagnosedBefore, after])}\n`);
    } else if (!page) out.write('\n(rpcscope diagnose needs the demo\'s Prometheus: run without --no-page, with prometheus on PATH)\n');
    if (page) out.write(`\nThe panel page was ${page.url}; it stops with the demo.\n`);
    if (args.summaryJson) await writeFile(args.summaryJson, `${JSON.stringify(summary, null, 2)}\n`);
    return 0;
  } catch (err) {
    if (tty) out.write('\x1b[?25h\n');
    process.stderr.write(`demo failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return 1;
  } finally {
    await page?.stop().catch(() => {});
    await fleet?.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
