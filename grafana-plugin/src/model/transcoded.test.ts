import { promFrames } from '../../test-support/prometheus-frames';
import { readSeries } from './series';
import { buildTranscoded } from './transcoded';

const METHOD = 'order.v1.OrderService/GetOrder';
const restRates: Record<string, number> = { [METHOD]: 40, 'order.v1.OrderService/ListOrders': 10 };
const restRate = (operation: string) => restRates[operation] ?? null;

describe('buildTranscoded', () => {
  it('is null without a transcoded query answer: a sidecar without --transcode exports none', () => {
    expect(buildTranscoded(readSeries(promFrames('rate', [{ labels: { operation: METHOD }, values: [1] }])), 'mean', restRate)).toBeNull();
  });

  it('gives each operation its transcoded calls, their share of its REST calls, and the translation time', () => {
    const column = buildTranscoded(
      readSeries([
        ...promFrames('transcoded', [
          { labels: { operation: METHOD }, values: [8, 12] },
          // By pod: summed.
          { labels: { operation: 'order.v1.OrderService/ListOrders', pod: 'a' }, values: [2, 2] },
          { labels: { operation: 'order.v1.OrderService/ListOrders', pod: 'b' }, values: [3, 3] },
          { labels: { operation: 'order.v1.OrderService/Ping' }, values: [1, 1] },
        ]),
        ...promFrames('translation_p50', [{ labels: {}, values: [0.00004, 0.00006] }]),
        ...promFrames('translation_p99', [{ labels: {}, values: [0.0004, 0.0004] }]),
      ]),
      'mean',
      restRate
    )!;
    expect(column.byOperation.get(METHOD)).toMatchObject({ rate: 10, share: 0.25 });
    expect(column.byOperation.get('order.v1.OrderService/ListOrders')).toMatchObject({ rate: 5, share: 0.5 });
    // No REST rate for it: no share to speak of.
    expect(column.byOperation.get('order.v1.OrderService/Ping')).toMatchObject({ rate: 1, share: null });
    expect(column.translationP50).toBeCloseTo(0.00005, 10);
    expect(column.translationP99).toBeCloseTo(0.0004, 10);
  });

  it('caps the share at all of the REST calls when the two queries disagree by a scrape', () => {
    const column = buildTranscoded(readSeries(promFrames('transcoded', [{ labels: { operation: METHOD }, values: [41] }])), 'mean', restRate)!;
    expect(column.byOperation.get(METHOD)?.share).toBe(1);
    expect(column.translationP99).toBeNull();
  });
});
