import { promFrames } from '../../test-support/prometheus-frames';
import { buildPods, detectPodLabel } from './pods';
import { readSeries } from './series';

const opts = { reducer: 'last' as const, skewThreshold: 1.5, podLabel: '', maxColumns: 120 };
const START = 1_700_000_000;

// Three pods, even until step 4, then pod-a takes 80 % of the calls.
const rates = {
  'pod-a': [10, 10, 10, 10, 80, 80, 80, 80],
  'pod-b': [10, 10, 10, 10, 10, 10, 10, 10],
  'pod-c': [10, 10, 10, 10, 10, 10, 10, 10],
};
const rateFrames = promFrames(
  'rate',
  Object.entries(rates).map(([pod, values]) => ({ labels: { pod }, values })),
  START,
  60
);
const connectionFrames = promFrames(
  'connections',
  [
    { labels: { pod: 'pod-a' }, values: [1] },
    { labels: { pod: 'pod-b' }, values: [4] },
    { labels: { pod: 'pod-c' }, values: [4] },
  ],
  START,
  60
);

describe('buildPods', () => {
  const model = buildPods(readSeries([...rateFrames, ...connectionFrames]), opts);

  it('ranks pods by share and computes the share from the rates', () => {
    expect(model.label).toBe('pod');
    expect(model.pods.map((p) => [p.pod, p.rate, p.share])).toEqual([
      ['pod-a', 80, 0.8],
      ['pod-b', 10, 0.1],
      ['pod-c', 10, 0.1],
    ]);
  });

  it('computes skew as max / mean when no skew query is given, and pins the busiest pod', () => {
    expect(model.skewFromQuery).toBe(false);
    expect(model.skew).toBeCloseTo(2.4);
    expect(model.skewed).toBe(true);
    expect(model.pinned).toBe('pod-a');
    expect(model.pods.map((p) => p.pinned)).toEqual([true, false, false]);
  });

  it('derives calls per connection from rate and connections when that query is absent', () => {
    expect(model.callsPerConnectionDerived).toBe(true);
    expect(model.pods.map((p) => [p.connections, p.callsPerConnection])).toEqual([
      [1, 80],
      [4, 2.5],
      [4, 2.5],
    ]);
  });

  it('shows when the skew began on the strip', () => {
    expect(model.stripTimes).toHaveLength(8);
    expect(model.pods[0]!.heat.map((h) => Number(h!.toFixed(2)))).toEqual([0.33, 0.33, 0.33, 0.33, 0.8, 0.8, 0.8, 0.8]);
    expect(model.skewSince).toBe((START + 4 * 60) * 1000);
    expect(model.skewSinceBeforeRange).toBe(false);
  });

  it('averages a long range into at most maxColumns columns', () => {
    const m = buildPods(readSeries(rateFrames), { ...opts, maxColumns: 4 });
    expect(m.stripTimes).toEqual([0, 2, 4, 6].map((i) => (START + i * 60) * 1000));
    expect(m.stripSkew.map((s) => Number(s!.toFixed(2)))).toEqual([1, 1, 2.4, 2.4]);
  });

  it('takes the headline skew from the skew query and the share from the share query', () => {
    const m = buildPods(
      readSeries([
        ...promFrames('share', [
          { labels: { upstream: '10.0.0.1:8080' }, values: [0.5, 0.55] },
          { labels: { upstream: '10.0.0.2:8080' }, values: [0.5, 0.45] },
        ]),
        ...promFrames('skew', [{ labels: {}, values: [1.0, 1.1] }]),
        ...promFrames('calls_per_connection', [{ labels: { upstream: '10.0.0.1:8080' }, values: [200, 250] }]),
      ]),
      opts
    );
    expect(m.label).toBe('upstream');
    expect(m.skewFromQuery).toBe(true);
    expect(m.skew).toBe(1.1);
    expect(m.skewed).toBe(false);
    expect(m.pinned).toBeNull();
    expect(m.skewSince).toBeNull();
    expect(m.pods.map((p) => [p.pod, p.share, p.rate, p.callsPerConnection])).toEqual([
      ['10.0.0.1:8080', 0.55, null, 250],
      ['10.0.0.2:8080', 0.45, null, null],
    ]);
    expect(m.callsPerConnectionDerived).toBe(false);
  });

  it('says the skew began before the range when it covers every column', () => {
    const m = buildPods(
      readSeries(
        promFrames('rate', [
          { labels: { pod: 'a' }, values: [9, 9, 9] },
          { labels: { pod: 'b' }, values: [1, 1, 1] },
        ])
      ),
      opts
    );
    expect(m.skewSince).toBe(START * 1000);
    expect(m.skewSinceBeforeRange).toBe(true);
  });
});

describe('detectPodLabel', () => {
  it('prefers pod, then upstream, then instance, unless told', () => {
    const s = (labels: Record<string, string>) => ({ refId: 'rate', labels, times: [], values: [] });
    expect(detectPodLabel([s({ instance: 'x', upstream: 'y' })], '')).toBe('upstream');
    expect(detectPodLabel([s({ instance: 'x' })], '')).toBe('instance');
    expect(detectPodLabel([s({ instance: 'x' })], 'node')).toBe('node');
    expect(detectPodLabel([s({ job: 'x' })], '')).toBeNull();
  });
});
