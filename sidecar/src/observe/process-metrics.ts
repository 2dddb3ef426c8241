// The sidecar's own health: what it is (version, Node, commit), when it started,
// CPU, memory and event loop delay. A proxy on a blocked event loop delays every
// call it carries, so the delay is exported next to the call latencies.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { BUILD_COMMIT, VERSION } from '../version.ts';
import { TextSink, ValueFamily } from './metric-cells.ts';
import type { ExpositionSink, ValueCell } from './metric-cells.ts';

/**
 * Node's sampling period for the event loop delay, in ms (its default, and
 * prom-client's). Each sample is the time between two runs of a timer of this
 * period, so an idle loop reads about this much and a blocked one more.
 */
const LOOP_RESOLUTION_MS = 10;

/** What monitorEventLoopDelay() returns (its type's name differs between Node's type versions). */
type LoopDelayHistogram = ReturnType<typeof monitorEventLoopDelay>;

/** prom-client's names for the same figures, so the usual Node.js dashboards read them. */
const LOOP_GAUGES: readonly [name: string, help: string, read: (h: LoopDelayHistogram) => number][] = [
  ['nodejs_eventloop_lag_min_seconds', 'The minimum recorded event loop delay.', (h) => h.min],
  ['nodejs_eventloop_lag_max_seconds', 'The maximum recorded event loop delay.', (h) => h.max],
  ['nodejs_eventloop_lag_mean_seconds', 'The mean of the recorded event loop delays.', (h) => h.mean],
  ['nodejs_eventloop_lag_stddev_seconds', 'The standard deviation of the recorded event loop delays.', (h) => h.stddev],
  ['nodejs_eventloop_lag_p50_seconds', 'The 50th percentile of the recorded event loop delays.', (h) => h.percentile(50)],
  ['nodejs_eventloop_lag_p90_seconds', 'The 90th percentile of the recorded event loop delays.', (h) => h.percentile(90)],
  ['nodejs_eventloop_lag_p99_seconds', 'The 99th percentile of the recorded event loop delays.', (h) => h.percentile(99)],
];

export interface BuildInfo {
  version: string;
  nodeVersion: string;
  commit: string;
}

/**
 * The commit: RPCSCOPE_COMMIT from the environment at run time (an image built
 * without its .git sets it), else the one sidecar/build.mjs read from git.
 */
export function buildInfo(env: Readonly<Record<string, string | undefined>> = process.env): BuildInfo {
  return { version: VERSION, nodeVersion: process.version, commit: env.RPCSCOPE_COMMIT || BUILD_COMMIT || 'unknown' };
}

export class ProcessMetrics {
  private readonly build: ValueFamily = new ValueFamily('rpcscope_build_info', 'The sidecar\'s version, the Node.js version it runs on and the commit it was built from; always 1.', 'gauge');
  private readonly start = new ValueFamily('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', 'gauge');
  private readonly cpu = new ValueFamily('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', 'counter');
  private readonly rss = new ValueFamily('process_resident_memory_bytes', 'Resident memory size in bytes.', 'gauge');
  private readonly cpuCell: ValueCell = this.cpu.cell({});
  private readonly rssCell: ValueCell = this.rss.cell({});
  private readonly loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  private readonly loopFamilies = LOOP_GAUGES.map(([name, help, read]) => ({ family: new ValueFamily(name, help, 'gauge'), read }));
  private readonly loopCells = this.loopFamilies.map(({ family }) => family.cell({}));

  constructor(env: Readonly<Record<string, string | undefined>> = process.env) {
    const b = buildInfo(env);
    this.build.cell({ version: b.version, node_version: b.nodeVersion, commit: b.commit }).value = 1;
    this.start.cell({}).value = Math.round(performance.timeOrigin) / 1000;
    this.loop.enable();
  }

  /** The exposition text, Prometheus or OpenMetrics; the event loop figures cover the time since the previous scrape. */
  render(openMetrics = false): string {
    const sink = new TextSink();
    this.renderTo(sink, openMetrics);
    return sink.text;
  }

  renderTo(sink: ExpositionSink, openMetrics: boolean): void {
    for (const family of this.update()) family.renderTo(sink, openMetrics);
  }

  /** Reads the figures anew and returns the families holding them, in exposition order. */
  update(): ValueFamily[] {
    const cpu = process.cpuUsage();
    this.cpuCell.value = (cpu.user + cpu.system) / 1e6;
    this.rssCell.value = process.memoryUsage.rss();
    // Before the first sample, min reads as 2^63 and mean as NaN: no delay seen is 0.
    const seen = this.loop.count > 0;
    this.loopFamilies.forEach(({ read }, i) => {
      this.loopCells[i]!.value = seen ? read(this.loop) / 1e9 : 0;
    });
    this.loop.reset();
    return [this.build, this.start, this.cpu, this.rss, ...this.loopFamilies.map(({ family }) => family)];
  }

  stop(): void {
    this.loop.disable();
  }
}
