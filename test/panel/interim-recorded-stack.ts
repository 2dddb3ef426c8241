// INTERIM stand-in for test/support's startRecordedStack(), which will run real sidecars carrying
// real traffic. Until then: the simulated fleet of interim-exposition.ts, scraped every second by
// a real Prometheus. The panel test depends only on the RecordedStack shape below, so swapping
// the import for the real one is the whole change.
import { InterimFleet, serveExposition } from './interim-exposition.ts';
import { startPrometheus, waitForSample } from './prometheus.ts';

export interface RecordedStack {
  /** Prometheus's base URL, e.g. http://127.0.0.1:9090. */
  prometheusUrl: string;
  /**
   * Unix seconds: traffic has been scraped from `start` to `end`; at `switchAt` it changed (a
   * deploy: CreateOrder faster, GetOrder's REST callers moved to gRPC, one pod pinned by a
   * sticky client). `end - switchAt` equals `switchAt - start`, so an `offset` of that length
   * puts the before range right behind the after range.
   */
  start: number;
  switchAt: number;
  end: number;
  /** The pods, as the `pod` label names them; the first is the one the load sticks to. */
  pods: string[];
  /** Range for rate() fitted to the scrape interval, as Grafana's $__rate_interval would be. */
  rateWindow: string;
  stop(): Promise<void>;
}

const WARM_UP_S = 6;
const PHASE_S = 15;

export async function startRecordedStack(): Promise<RecordedStack> {
  const pods = ['orders-0', 'orders-1', 'orders-2'];
  const t0 = Math.ceil(Date.now() / 1000);
  const start = t0 + WARM_UP_S;
  const switchAt = start + PHASE_S;
  const end = switchAt + PHASE_S;
  const fleet = new InterimFleet({
    pods,
    switchAtMs: switchAt * 1000,
    shares: { before: [1 / 3, 1 / 3, 1 / 3], after: [0.7, 0.15, 0.15] },
  });
  fleet.start();
  const server = await serveExposition(fleet);
  const prometheus = await startPrometheus(
    pods.map((pod) => ({ address: server.address, metricsPath: `/metrics/${pod}`, labels: { pod } }))
  );
  const stop = async () => {
    await prometheus.stop();
    await server.close();
    fleet.stop();
  };
  try {
    // Wait until every pod has been scraped past the end of the recording.
    await waitForSample(prometheus.url, 'up', end + 1, (end + 30 - t0) * 1000);
  } catch (e) {
    await stop();
    throw e;
  }
  return { prometheusUrl: prometheus.url, start, switchAt, end, pods, rateWindow: '4s', stop };
}
