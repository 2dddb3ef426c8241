// The sidecar's own health: CPU, memory and event loop delay. A proxy on a
// blocked event loop delays every call it carries, so the delay is a histogram
// that can be read next to the call latencies.
import { performance } from 'node:perf_hooks';
import type { HrTime } from '@opentelemetry/api';
import type { MetricData } from '@opentelemetry/sdk-metrics';
import { EVENT_LOOP_DELAY_SECONDS } from './buckets.ts';
import { HistogramFamily, ValueFamily } from './metric-cells.ts';
import type { HistogramCell, ValueCell } from './metric-cells.ts';

/**
 * How often the loop is sampled. Each sample is how late a timer fires, which is
 * what a call arriving at that moment would wait; sampling at a fixed rate makes
 * the histogram the distribution of that wait over time.
 */
const SAMPLE_INTERVAL_MS = 50;

export class ProcessMetrics {
  private readonly cpu = new ValueFamily('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', 'counter');
  private readonly rss = new ValueFamily('process_resident_memory_bytes', 'Resident memory size in bytes.', 'gauge');
  private readonly loop = new HistogramFamily('nodejs_eventloop_delay_seconds', 'How late the event loop ran a timer, sampled every 50 ms.', EVENT_LOOP_DELAY_SECONDS);
  private readonly cpuCell: ValueCell = this.cpu.cell({});
  private readonly rssCell: ValueCell = this.rss.cell({});
  private readonly loopCell: HistogramCell = this.loop.cell({});
  private expected = performance.now() + SAMPLE_INTERVAL_MS;
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setTimeout(() => this.sample(), SAMPLE_INTERVAL_MS).unref();
  }

  private sample(): void {
    const now = performance.now();
    this.loopCell.record(Math.max(0, now - this.expected) / 1000);
    this.expected = now + SAMPLE_INTERVAL_MS;
    this.timer.refresh();
  }

  collect(startTime: HrTime, endTime: HrTime): MetricData[] {
    const cpu = process.cpuUsage();
    this.cpuCell.value = (cpu.user + cpu.system) / 1e6;
    this.rssCell.value = process.memoryUsage.rss();
    return [this.cpu, this.rss, this.loop].map((f) => f.toMetricData(startTime, endTime));
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
