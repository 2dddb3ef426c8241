import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HistogramFamily, ValueFamily } from '../../src/observe/metric-cells.ts';
import { newWriter, writeFamily } from '../../src/observe/prometheus-protobuf.ts';

test('a histogram bucket holds values up to and including its boundary (Prometheus le)', () => {
  const family = new HistogramFamily('h', 'help', [1, 5]);
  const cell = family.cell({ a: 'x' });
  for (const v of [0, 1, 1.0001, 5, 6, 100]) cell.record(v);
  assert.deepEqual(cell.counts, [2, 2, 2]);
  assert.equal(cell.count, 6);
  assert.equal(cell.sum, 113.0001);
});

test('families render as Prometheus text: counters, gauges, and histograms with cumulative buckets', () => {
  const counter = new ValueFamily('c_total', 'help', 'counter');
  assert.equal(counter.render(), '', 'a family without cells is left out');
  counter.cell({ k: 'v', 'service.name': 'a"b\\c\nd' }).value = 3;
  assert.equal(counter.render(), '# HELP c_total help\n# TYPE c_total counter\nc_total{k="v",service_name="a\\"b\\\\c\\nd"} 3\n');
  const gauge = new ValueFamily('g', 'two\nlines', 'gauge');
  gauge.cell({}).value = -1;
  assert.equal(gauge.render(), '# HELP g two\\nlines\n# TYPE g gauge\ng -1\n');
  const hist = new HistogramFamily('h', 'help', [0.5, 1]);
  const cell = hist.cell({ m: 'x' });
  cell.record(0.75);
  cell.record(2);
  hist.cell({});
  assert.equal(
    hist.render(),
    [
      '# HELP h help',
      '# TYPE h histogram',
      'h_count{m="x"} 2',
      'h_sum{m="x"} 2.75',
      'h_bucket{m="x",le="0.5"} 0',
      'h_bucket{m="x",le="1"} 1',
      'h_bucket{m="x",le="+Inf"} 2',
      'h_count 0',
      'h_sum 0',
      'h_bucket{le="0.5"} 0',
      'h_bucket{le="1"} 0',
      'h_bucket{le="+Inf"} 0',
      '',
    ].join('\n'),
  );
  cell.record(0.1);
  assert.match(hist.render(), /^h_bucket\{m="x",le="0\.5"\} 1$/m, 'rendered labels are reused, values are read live');
});

test('with native buckets, a histogram kept in parts is scraped over protobuf as one cell that saw every value would be', () => {
  const parted = new HistogramFamily('h', 'help', [0.5, 1]);
  const whole = new HistogramFamily('h', 'help', [0.5, 1]);
  parted.native = whole.native = true;
  const series = parted.cell({ m: 'x' });
  const ok = parted.part(series, { code: 'OK' });
  const notFound = parted.part(series, { code: 'NOT_FOUND' });
  const one = whole.cell({ m: 'x' });
  // Far apart and below the lowest bucket of the other part, so the folded buckets must grow at both ends; and a zero.
  for (const [part, v] of [[ok, 0.25], [notFound, 0.0001], [ok, 2], [notFound, 40], [ok, 0], [notFound, 0.26]] as const) {
    part.record(v);
    one.record(v);
  }
  const bytes = (f: HistogramFamily): Buffer => {
    const w = newWriter();
    writeFamily(w, f, false);
    return Buffer.from(w.finish());
  };
  assert.deepEqual(bytes(parted), bytes(whole));
  assert.deepEqual({ low: series.native!.low, counts: series.native!.counts, zero: series.native!.zeroCount }, { low: one.native!.low, counts: one.native!.counts, zero: one.native!.zeroCount });
  // Folded again at the next scrape, from the parts, not added twice.
  ok.record(0.5);
  one.record(0.5);
  assert.deepEqual(bytes(parted), bytes(whole));
});

test('a histogram kept in parts renders as their sum, each bucket\'s exemplar the newest of theirs, and as one cell would have', () => {
  const parted = new HistogramFamily('h', 'help', [0.5, 1]);
  const whole = new HistogramFamily('h', 'help', [0.5, 1]);
  const series = parted.cell({ m: 'x' });
  const ok = parted.part(series, { code: 'OK' });
  const notFound = parted.part(series, { code: 'NOT_FOUND' });
  const one = whole.cell({ m: 'x' });
  for (const [part, v] of [[ok, 0.25], [notFound, 0.75], [ok, 2], [notFound, 0.3]] as const) {
    part.record(v);
    one.record(v);
  }
  assert.equal(parted.render(), whole.render());
  ok.setExemplar(0, 'a'.repeat(32), 'b'.repeat(16), 0.25, 1_000);
  notFound.setExemplar(0, 'c'.repeat(32), 'd'.repeat(16), 0.3, 2_000);
  notFound.setExemplar(1, 'e'.repeat(32), 'f'.repeat(16), 0.75, 500);
  const text = parted.render(true);
  assert.match(text, /^h_bucket\{m="x",le="0.5"\} 2 # \{trace_id="c{32}",span_id="d{16}"\} 0.3 2.000$/m);
  assert.match(text, /^h_bucket\{m="x",le="1"\} 3 # \{trace_id="e{32}",span_id="f{16}"\} 0.75 0.500$/m);
  assert.doesNotMatch(text, /code=/);
  // A newer exemplar in the other part replaces the bucket's at the next render.
  ok.setExemplar(0, '1'.repeat(32), '2'.repeat(16), 0.2, 3_000);
  assert.match(parted.render(true), /^h_bucket\{m="x",le="0.5"\} 2 # \{trace_id="1{32}",span_id="2{16}"\} 0.2 3.000$/m);
});
