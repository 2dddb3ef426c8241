// Detail levels (--metrics-detail): how much of the per-method distribution a
// sidecar exports. Every sidecar's series are multiplied by the fleet, so the
// default is sized for a 1,000-pod Prometheus (docs/metrics.md "Detail levels
// and cost"); a team buys the full distribution for the services that need it.
// Every name the dashboards, rules and panel query exists at every level.
import type { MetricsDetail } from '../config/schema.ts';
import { CALL_DURATION_SECONDS, CALL_DURATION_SECONDS_BASIC, CALL_DURATION_SECONDS_STANDARD } from './buckets.ts';

export interface DetailLevel {
  /** Boundaries of rpcscope_call_duration_seconds. */
  readonly durationBuckets: readonly number[];
  /** Whether rpcscope_call_duration_seconds carries `code` (one histogram per status seen, rather than one per method). */
  readonly durationByCode: boolean;
  /** Whether the rpcscope_payload_bytes histogram is exported beside rpcscope_call_bytes_total. */
  readonly payloadDistribution: boolean;
}

export const DETAIL_LEVELS: Readonly<Record<MetricsDetail, DetailLevel>> = {
  basic: { durationBuckets: CALL_DURATION_SECONDS_BASIC, durationByCode: false, payloadDistribution: false },
  standard: { durationBuckets: CALL_DURATION_SECONDS_STANDARD, durationByCode: false, payloadDistribution: false },
  full: { durationBuckets: CALL_DURATION_SECONDS, durationByCode: true, payloadDistribution: true },
};
