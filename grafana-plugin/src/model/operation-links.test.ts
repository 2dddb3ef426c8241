import { InterpolateFunction } from '@grafana/data';
import { operationLinks, RPC_OVERVIEW_LINK } from './operation-links';

/**
 * Grafana's interpolation as a dashboard with the given variables does it: `${name:queryparam}`
 * becomes `var-name=value` once per value, `${__url_time_range}` the range, and a variable the
 * dashboard lacks is left as written.
 */
function dashboard(variables: Record<string, string[]>): InterpolateFunction {
  return (text: string) =>
    text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([a-z]+))?\}/g, (whole, name: string, format?: string) => {
      if (name === '__url_time_range') {
        return 'from=now-1h&to=now';
      }
      const values = variables[name];
      if (!values) {
        return whole;
      }
      return format === 'queryparam' ? values.map((v) => `var-${name}=${encodeURIComponent(v)}`).join('&') : values.join(',');
    });
}

const overview = (operation: string, variables: Record<string, string[]>) =>
  operationLinks([{ links: [RPC_OVERVIEW_LINK] }], { operation }, dashboard(variables))[0];

describe('operation links', () => {
  it('opens the RPC overview filtered to the row operation, with the time range', () => {
    expect(overview('GetOrder', {})).toEqual({
      title: 'RPC overview for GetOrder',
      href: '/d/rpcscope-rpc-overview/rpcscope-rpc-overview?var-operation=GetOrder&from=now-1h&to=now',
      targetBlank: false,
    });
  });

  it('carries the cluster and service chosen on this dashboard, every value of a multi-value one', () => {
    expect(overview('GetOrder', { cluster: ['eu-1', 'us-2'], service: ['orders'] })?.href).toBe(
      '/d/rpcscope-rpc-overview/rpcscope-rpc-overview?var-operation=GetOrder&var-cluster=eu-1&var-cluster=us-2&var-service=orders&from=now-1h&to=now'
    );
  });

  it('leaves out a variable this dashboard does not have rather than linking to ${cluster:queryparam}', () => {
    const href = overview('GetOrder', { service: ['orders'] })?.href ?? '';
    expect(href).toBe('/d/rpcscope-rpc-overview/rpcscope-rpc-overview?var-operation=GetOrder&var-service=orders&from=now-1h&to=now');
    expect(href).not.toContain('${');
  });

  it('does not pass this dashboard operation, method or pod selection along', () => {
    const href = overview('GetOrder', { operation: ['ListOrders'], method: ['x.Y/Z'], pod: ['orders-1'] })?.href ?? '';
    expect(new URL(href, 'http://grafana').searchParams.getAll('var-operation')).toEqual(['GetOrder']);
    expect(href).not.toMatch(/var-method|var-pod/);
  });

  it('URL-encodes the operation (a REST route template) in the URL, not in the title', () => {
    const link = overview('GET /v1/orders/{id}', {});
    expect(link?.href).toContain('var-operation=GET%20%2Fv1%2Forders%2F%7Bid%7D&');
    expect(link?.title).toBe('RPC overview for GET /v1/orders/{id}');
  });

  it('gives no link when the field config has none', () => {
    expect(operationLinks([{}], { operation: 'GetOrder' }, dashboard({}))).toEqual([]);
  });
});
