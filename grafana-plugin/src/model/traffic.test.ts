import { promFrames } from '../../test-support/prometheus-frames';
import { readSeries } from './series';
import { noTraffic, refIdsRead } from './traffic';

const op = { operation: 'GetOrder', protocol: 'grpc' };

describe('noTraffic', () => {
  it('is no-series when the queries the mode reads answered nothing', () => {
    expect(noTraffic(readSeries([]), { mode: 'protocols', metrics: ['p99'], queried: ['p99', 'rate'] })).toBe('no-series');
    expect(noTraffic(readSeries([]), { mode: 'pods', metrics: [], queried: null })).toBe('no-series');
  });

  it('leaves to the query help an empty answer to queries under refIds the mode does not read', () => {
    expect(noTraffic(readSeries([]), { mode: 'protocols', metrics: ['p99'], queried: ['A', 'B'] })).toBeNull();
    expect(noTraffic(readSeries([]), { mode: 'beforeAfter', metrics: ['p99'], queried: ['rate'] })).toBeNull();
  });

  it('is all-zero when every point the mode reads is 0, NaN or missing', () => {
    const s = readSeries([
      ...promFrames('rate', [{ labels: op, values: [0, 0, null as unknown as number] }]),
      ...promFrames('p99', [{ labels: op, values: [NaN, NaN] }]),
      // A query the mode does not read does not count as traffic.
      ...promFrames('A', [{ labels: op, values: [5] }]),
    ]);
    expect(noTraffic(s, { mode: 'protocols', metrics: ['p99', 'rate'], queried: ['rate', 'p99', 'A'] })).toBe('all-zero');
  });

  it('is null once one point counts, on either side of before/after', () => {
    const s = readSeries([
      ...promFrames('rate', [{ labels: op, values: [0, 0] }]),
      ...promFrames('rate_before', [{ labels: op, values: [0, 3] }]),
    ]);
    expect(noTraffic(s, { mode: 'beforeAfter', metrics: ['rate'], queried: null })).toBeNull();
    expect(noTraffic(s, { mode: 'protocols', metrics: ['rate'], queried: null })).toBe('all-zero');
  });

  it('reads the pods refIds in pods mode', () => {
    expect([...refIdsRead('pods', [])].sort()).toEqual(['calls_per_connection', 'connections', 'rate', 'share', 'skew']);
    const s = readSeries(promFrames('connections', [{ labels: { pod: 'a' }, values: [2] }]));
    expect(noTraffic(s, { mode: 'pods', metrics: [], queried: null })).toBeNull();
  });
});
