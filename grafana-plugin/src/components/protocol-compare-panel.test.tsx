import React from 'react';
import { fireEvent, render, screen, within } from '@testing-library/react';
import { createTheme, DataFrame, DataQueryRequest, InterpolateFunction, ThemeContext, ThresholdsMode } from '@grafana/data';
import { panelProps } from '../../test-support/panel-props';
import { promFrames } from '../../test-support/prometheus-frames';
import { RPC_OVERVIEW_LINK } from '../model/operation-links';
import { PanelOptions } from '../types';
import { ALL_ZERO_MESSAGE } from './no-traffic';
import { ProtocolComparePanel } from './protocol-compare-panel';

const op = (operation: string, protocol: string) => ({ operation, protocol });
const steady = (v: number, n = 6) => Array.from({ length: n }, () => v);

function renderPanel(
  frames: DataFrame[],
  options: Partial<PanelOptions>,
  mode: 'dark' | 'light' = 'dark',
  replaceVariables?: InterpolateFunction
) {
  const theme = createTheme({ colors: { mode } });
  const props = panelProps(frames, options);
  const utils = render(
    <ThemeContext.Provider value={theme}>
      <ProtocolComparePanel {...props} replaceVariables={replaceVariables ?? props.replaceVariables} />
    </ThemeContext.Provider>
  );
  return { ...utils, theme };
}

const cell = (container: HTMLElement, operation: string, protocol: string, metric: string) => {
  const el = container.querySelector<HTMLElement>(
    `td[data-operation="${operation}"][data-protocol="${protocol}"][data-metric="${metric}"]`
  );
  if (!el) {
    throw new Error(`no cell ${operation}/${protocol}/${metric}`);
  }
  return el;
};

const protocolFrames = [
  ...promFrames('p99', [
    { labels: op('GetOrder', 'rest'), values: steady(0.1) },
    { labels: op('GetOrder', 'grpc'), values: steady(0.062) },
  ]),
  ...promFrames('errors', [
    { labels: op('GetOrder', 'rest'), values: steady(0.001) },
    { labels: op('GetOrder', 'grpc'), values: steady(0.021) },
  ]),
];

describe('protocols mode', () => {
  it.each(['dark', 'light'] as const)('shows values and coloured deltas against the baseline (%s theme)', (mode) => {
    const { container, theme } = renderPanel(protocolFrames, { mode: 'protocols', metrics: ['p99', 'errors'] }, mode);
    expect(screen.getByRole('columnheader', { name: /REST\s*baseline/ })).toBeInTheDocument();

    const p99 = cell(container, 'GetOrder', 'grpc', 'p99');
    expect(p99).toHaveTextContent('62 ms');
    const delta = within(p99).getByText('\u221238 %');
    expect(delta).toHaveAttribute('title', 'p99 \u221238 % vs REST (better)');
    expect(delta).toHaveStyle({ color: theme.colors.success.text });

    const errors = within(cell(container, 'GetOrder', 'grpc', 'errors')).getByText('+2.00 pp');
    expect(errors).toHaveStyle({ color: theme.colors.error.text });

    // The baseline column has values but no delta.
    expect(cell(container, 'GetOrder', 'rest', 'p99').textContent).toBe('100 ms');
  });

  it('draws a sparkline in each cell with a series, unless turned off', () => {
    const { container, unmount } = renderPanel(protocolFrames, { mode: 'protocols', metrics: ['p99'] });
    expect(cell(container, 'GetOrder', 'grpc', 'p99').querySelector('.uplot canvas')).not.toBeNull();
    unmount();
    const off = renderPanel(protocolFrames, { mode: 'protocols', metrics: ['p99'], showSparklines: false });
    expect(off.container.querySelector('.uplot')).toBeNull();
  });

  it('says when the baseline protocol has no series', () => {
    renderPanel(protocolFrames, { mode: 'protocols', baseline: 'connect', metrics: ['p99'] });
    expect(screen.getByText('No Connect series to compare with: choose another baseline protocol.')).toBeInTheDocument();
  });
});

describe('before/after mode', () => {
  it('shows both sides, the change, and warns where a side has too few calls', () => {
    const frames = [
      ...promFrames('p99', [
        { labels: op('GetOrder', 'grpc'), values: steady(0.05) },
        { labels: op('ListOrders', 'grpc'), values: steady(0.2) },
      ]),
      ...promFrames('p99_before', [
        { labels: op('GetOrder', 'rest'), values: steady(0.1) },
        { labels: op('ListOrders', 'grpc'), values: steady(0.1) },
      ]),
      ...promFrames('rate', [
        { labels: op('GetOrder', 'grpc'), values: steady(10) },
        { labels: op('ListOrders', 'grpc'), values: steady(0.1) },
      ]),
      ...promFrames('rate_before', [
        { labels: op('GetOrder', 'rest'), values: steady(10) },
        { labels: op('ListOrders', 'grpc'), values: steady(10) },
      ]),
    ];
    const { container } = renderPanel(frames, { mode: 'beforeAfter', metrics: ['p99'] });
    const getOrder = container.querySelector<HTMLElement>('tbody[data-operation="GetOrder"]')!;
    expect(getOrder).toHaveTextContent('REST → gRPC');
    expect(getOrder).toHaveTextContent('900 → 900 calls');
    expect(within(getOrder).getByText('\u221250 %')).toHaveAttribute('data-verdict', 'better');
    expect(within(getOrder).queryByRole('alert')).toBeNull();

    // The headline: p99 100 ms → 50 ms on 900 calls a side; ListOrders' +100 % rests on 9 calls.
    expect(container.querySelector('[data-role="headline-figure"]')).toHaveTextContent('\u221250 %');
    expect(container.querySelector('[data-role="headline-change"]')).toHaveTextContent('p99 \u221250 % for GetOrder (REST → gRPC)');
    expect(container.querySelector('tbody[data-operation="ListOrders"]')).toBeNull();
    const toggle = screen.getByRole('button', { name: '▸ 1 row with too few calls (under 500 on a side)' });
    fireEvent.click(toggle);
    expect(toggle).toHaveAttribute('aria-expanded', 'true');

    const listOrders = container.querySelector<HTMLElement>('tbody[data-operation="ListOrders"]')!;
    expect(within(listOrders).getByRole('alert')).toHaveTextContent('Too few calls (9 after; need 500): deltas unreliable');
    expect(within(listOrders).getByText('+100 %')).toHaveAttribute('data-verdict', 'worse');
  });
});

describe('the headline and Grafana field config', () => {
  const frames = [
    ...protocolFrames,
    ...promFrames('rate', [
      { labels: op('GetOrder', 'rest'), values: steady(10) },
      { labels: op('GetOrder', 'grpc'), values: steady(10) },
    ]),
  ];

  it('protocols: answers first, with the largest difference as the figure', () => {
    const { container, theme } = renderPanel(frames, { mode: 'protocols', metrics: ['p99', 'errors', 'rate'] });
    // 6 points × 15 s × 10/s = 900 calls a side. errors +2 pp spans 4 thresholds of 0.5 pp, p99 −38 % 3.8 of 10 %.
    expect(container.querySelector('[data-role="verdict"]')).toHaveTextContent('GetOrder: gRPC errors +2.00 pp, p99 \u221238 % vs REST');
    const figure = container.querySelector<HTMLElement>('[data-role="headline-figure"]')!;
    expect(figure).toHaveTextContent('+2.00 pp');
    expect(figure).toHaveStyle({ color: theme.colors.error.text });
  });

  it('formats with the unit and decimals and colours by the thresholds the field config sets', () => {
    const withConfig = frames.map((f) =>
      f.refId === 'p99'
        ? {
            ...f,
            fields: f.fields.map((field) =>
              field.name === 'Value'
                ? {
                    ...field,
                    config: {
                      unit: 'ms',
                      decimals: 1,
                      thresholds: { mode: ThresholdsMode.Absolute, steps: [{ value: -Infinity, color: 'green' }, { value: 0.08, color: 'red' }] },
                    },
                  }
                : field
            ),
          }
        : f
    );
    const { container, theme } = renderPanel(withConfig, { mode: 'protocols', metrics: ['p99'] });
    // Grafana's ms unit reads the value as milliseconds, as it would in any panel.
    const rest = cell(container, 'GetOrder', 'rest', 'p99').querySelector('span')!;
    expect(rest).toHaveTextContent('0.1 ms');
    expect(rest).toHaveStyle({ color: theme.visualization.getColorByName('red') });
    expect(cell(container, 'GetOrder', 'grpc', 'p99').querySelector('span')).toHaveStyle({
      color: theme.visualization.getColorByName('green'),
    });
  });

  it('links each operation through the field config data links', () => {
    const linked = frames.map((f) => ({
      ...f,
      fields: f.fields.map((field) =>
        field.name === 'Value' ? { ...field, config: { links: [RPC_OVERVIEW_LINK] } } : field
      ),
    }));
    // A dashboard with a service variable and no cluster variable, as Grafana interpolates it.
    const replace: InterpolateFunction = (s) =>
      s.replace('${service:queryparam}', 'var-service=orders').replace('${__url_time_range}', 'from=now-1h&to=now');
    const { container } = renderPanel(linked, { mode: 'protocols', metrics: ['p99'] }, 'dark', replace);
    const link = container.querySelector('tbody[data-operation="GetOrder"] a[data-role="operation-link"]')!;
    expect(link).toHaveAttribute(
      'href',
      '/d/rpcscope-rpc-overview/rpcscope-rpc-overview?var-operation=GetOrder&var-service=orders&from=now-1h&to=now'
    );
    expect(link).toHaveAttribute('title', 'RPC overview for GetOrder');
  });
});

describe('protocols mode with tRPC', () => {
  it('shows tRPC as a column of its own beside REST, with its change against the baseline', () => {
    const frames = promFrames('p99', [
      { labels: op('GetOrder', 'rest'), values: steady(0.1) },
      { labels: op('GetOrder', 'grpc'), values: steady(0.05) },
      { labels: op('GetOrder', 'trpc'), values: steady(0.13) },
    ]);
    const { container } = renderPanel(frames, { mode: 'protocols', metrics: ['p99'] });
    const headers = screen.getAllByRole('columnheader').map((h) => h.getAttribute('data-protocol'));
    expect(headers).toEqual([null, null, 'rest', 'grpc', 'trpc']);
    expect(screen.getByRole('columnheader', { name: 'tRPC' })).toBeInTheDocument();
    const trpc = cell(container, 'GetOrder', 'trpc', 'p99');
    expect(trpc).toHaveTextContent('130 ms');
    expect(within(trpc).getByText('+30 %')).toHaveAttribute('title', 'p99 +30 % vs REST (worse)');
  });
});

describe('protocols mode with REST calls transcoded to gRPC', () => {
  const METHOD = 'order.v1.OrderService/GetOrder';
  const frames = [
    ...promFrames('p99', [
      { labels: op(METHOD, 'rest'), values: steady(0.1) },
      { labels: op(METHOD, 'grpc'), values: steady(0.05) },
      { labels: op(METHOD, 'trpc'), values: steady(0.09) },
    ]),
    ...promFrames('rate', [
      { labels: op(METHOD, 'rest'), values: steady(40) },
      { labels: op(METHOD, 'grpc'), values: steady(20) },
      { labels: op(METHOD, 'trpc'), values: steady(5) },
    ]),
    ...promFrames('transcoded', [{ labels: { operation: METHOD }, values: steady(10) }]),
    ...promFrames('translation_p50', [{ labels: {}, values: steady(0.00005) }]),
    ...promFrames('translation_p99', [{ labels: {}, values: steady(0.0004) }]),
  ];

  it('shows a transcoded column beside REST: the calls that went through the transcoder, their share, the translation time', () => {
    const { container } = renderPanel(frames, { mode: 'protocols', metrics: ['p99', 'rate'] });
    const headers = screen.getAllByRole('columnheader').map((h) => h.getAttribute('data-protocol') ?? h.getAttribute('data-column'));
    expect(headers).toEqual([null, null, 'rest', 'transcoded', 'grpc', 'trpc']);
    const header = container.querySelector('th[data-column="transcoded"]')!;
    expect(header).toHaveTextContent('REST \u2192 gRPC (transcoded)');
    expect(header.querySelector('[data-role="translation-time"]')).toHaveTextContent('translation p50 50 µs, p99 400 µs');
    const cellEl = container.querySelector(`td[data-column="transcoded"][data-operation="${METHOD}"]`)!;
    expect(cellEl).toHaveAttribute('rowspan', '2');
    expect(cellEl.querySelector('[data-role="transcoded-rate"]')).toHaveTextContent('10/s');
    expect(cellEl.querySelector('[data-role="transcoded-share"]')).toHaveTextContent('25.00% of REST');
    // The other columns keep their places in the row below the spanning cell.
    expect(cell(container, METHOD, 'trpc', 'rate')).toHaveTextContent('5/s');
    expect(container.querySelectorAll(`tbody[data-operation="${METHOD}"] tr`)[1]!.children).toHaveLength(4);
  });

  it('has no transcoded column without the transcoded query', () => {
    const { container } = renderPanel(frames.filter((f) => f.refId !== 'transcoded'), { mode: 'protocols', metrics: ['p99'] });
    expect(container.querySelector('[data-column="transcoded"]')).toBeNull();
  });
});

describe('pods mode', () => {
  it('shows the skew figure, the pinned pod and when the skew began', () => {
    const frames = [
      ...promFrames('rate', [
        { labels: { pod: 'orders-0' }, values: [10, 10, 10, 70, 70, 70] },
        { labels: { pod: 'orders-1' }, values: [10, 10, 10, 15, 15, 15] },
        { labels: { pod: 'orders-2' }, values: [10, 10, 10, 15, 15, 15] },
      ], 1_700_000_000, 60),
      ...promFrames('connections', [
        { labels: { pod: 'orders-0' }, values: [1] },
        { labels: { pod: 'orders-1' }, values: [3] },
        { labels: { pod: 'orders-2' }, values: [3] },
      ], 1_700_000_000, 60),
    ];
    const { container } = renderPanel(frames, { mode: 'pods', reducer: 'last' });
    expect(container.querySelector('[data-role="skew-value"]')).toHaveTextContent('2.10');
    expect(container.querySelector('[data-role="pinned"]')).toHaveTextContent(
      'Pinned: orders-0 takes 70 % of calls (70/s) over 1 connection'
    );
    // 1_700_000_000 + 3 × 60 s is 22:16:20 UTC.
    expect(container.querySelector('[data-role="since"]')).toHaveTextContent('Skew ≥ 1.5 since 22:16:20');
    const pinned = container.querySelector<HTMLElement>('tr[data-pinned="true"]')!;
    expect(pinned).toHaveAttribute('data-pod', 'orders-0');
    expect(within(pinned).getByText('pinned')).toBeInTheDocument();
    expect(container.querySelectorAll('tr[data-pinned="false"]')).toHaveLength(2);
  });
});

describe('data that does not fit the mode', () => {
  it('names the expected labels, what was found, and an example query', () => {
    renderPanel(promFrames('p99', [{ labels: { job: 'rpcscope' }, values: [1] }]), { mode: 'protocols', metrics: ['p99'] });
    const status = screen.getByRole('status');
    expect(status).toHaveTextContent('The series of p99 lack the label operation or protocol.');
    expect(status).toHaveTextContent('whose series carry the labels operation and protocol');
    expect(status).toHaveTextContent('Found: p99 (labels job)');
    expect(status).toHaveTextContent(
      'histogram_quantile(0.99, sum by (operation, protocol, le) (rate(rpcscope_call_duration_seconds_bucket{direction="inbound"}[$__rate_interval])))'
    );
  });

  it('says the queries returned nothing under refIds the mode does not read', () => {
    const props = panelProps([], { mode: 'pods' });
    render(
      <ThemeContext.Provider value={createTheme()}>
        <ProtocolComparePanel {...props} data={{ ...props.data, request: { targets: [{ refId: 'A' }] } as unknown as DataQueryRequest }} />
      </ThemeContext.Provider>
    );
    expect(screen.getByRole('status')).toHaveTextContent('The queries (refId A) returned no data, and none has a refId this mode reads.');
    expect(screen.getByRole('status')).toHaveTextContent('sum by (pod) (rpcscope_connections_active{side="downstream"})');
  });
});

describe('no traffic', () => {
  // @grafana/runtime's PanelDataErrorView as installed; Grafana replaces it with its own view when
  // it starts (the browser test renders that one), which shows the same message or "No data".
  const runtimeView = (message?: string) => `Unable to render data: ${message ?? ''}.`;

  const withRequest = (frames: DataFrame[], refIds: string[], options: Partial<PanelOptions>, noValue?: string) => {
    const props = panelProps(frames, options);
    const targets = refIds.map((refId) => ({ refId }));
    const theme = createTheme({ colors: { mode: 'dark' } });
    return render(
      <ThemeContext.Provider value={theme}>
        <ProtocolComparePanel
          {...props}
          fieldConfig={{ defaults: noValue === undefined ? {} : { noValue }, overrides: [] }}
          data={{ ...props.data, request: { targets } as unknown as DataQueryRequest }}
        />
      </ThemeContext.Provider>
    );
  };
  const emptyState = (container: HTMLElement) => container.querySelector('[data-role="no-traffic"]');

  it('renders Grafana’s PanelDataErrorView with no message when the queries the mode reads return no series', () => {
    const { container } = withRequest([], ['p99', 'rate'], { mode: 'protocols', metrics: ['p99', 'rate'] });
    // No message: Grafana's view then says the panel's "No value" text, or "No data".
    expect(emptyState(container)).toHaveTextContent(runtimeView());
    expect(emptyState(container)).toHaveAttribute('data-reason', 'no-series');
    expect(container.querySelector('[data-role="missing-data"]')).toBeNull();
  });

  it('says there were no calls when every series the mode reads is zero or undefined', () => {
    const frames = [
      ...promFrames('rate', [
        { labels: op('GetOrder', 'grpc'), values: steady(0) },
        { labels: op('GetOrder', 'rest'), values: steady(0) },
      ]),
      ...promFrames('p99', [{ labels: op('GetOrder', 'grpc'), values: steady(NaN) }]),
    ];
    const { container } = withRequest(frames, ['rate', 'p99'], { mode: 'protocols', metrics: ['p99', 'rate'] });
    expect(emptyState(container)).toHaveTextContent(runtimeView(ALL_ZERO_MESSAGE));
    expect(emptyState(container)).toHaveAttribute('data-reason', 'all-zero');
    expect(container.querySelector('table')).toBeNull();
  });

  it('says the panel’s own "No value" text for all-zero series, as Grafana does for none', () => {
    const { container } = withRequest(promFrames('rate', [{ labels: { pod: 'a' }, values: steady(0) }]), ['rate'], { mode: 'pods' }, 'Idle');
    expect(emptyState(container)).toHaveTextContent(runtimeView('Idle'));
  });

  it('keeps the query help for queries the mode cannot read, with no series', () => {
    const { container } = withRequest([], ['A'], { mode: 'protocols', metrics: ['p99'] });
    expect(emptyState(container)).toBeNull();
    expect(screen.getByRole('status')).toHaveTextContent('The queries (refId A) returned no data, and none has a refId this mode reads.');
  });

  it('keeps the query help for all-zero series without the labels the mode needs', () => {
    const { container } = withRequest(promFrames('rate', [{ labels: { job: 'x' }, values: steady(0) }]), ['rate'], {
      mode: 'protocols',
      metrics: ['rate'],
    });
    expect(emptyState(container)).toBeNull();
    expect(screen.getByRole('status')).toHaveTextContent('The series of rate lack the label operation or protocol.');
  });

  it('shows the view once one point counts a call', () => {
    const frames = promFrames('rate', [{ labels: op('GetOrder', 'grpc'), values: [0, 0, 0.2, 0] }]);
    const { container } = withRequest(frames, ['rate'], { mode: 'protocols', metrics: ['rate'] });
    expect(emptyState(container)).toBeNull();
    expect(cell(container, 'GetOrder', 'grpc', 'rate')).toBeInTheDocument();
  });
});
