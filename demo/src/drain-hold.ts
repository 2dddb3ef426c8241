// A call of the demo's own that holds a sidecar's drain open. A sidecar ends
// its drain, and closes its admin port, within 50 ms of its last call ending,
// so a scraper can miss that call's count. With this call open straight to
// the sidecar (not through the balancer), the drain cannot end until the demo
// has read the counts of every other call and releases it.
import http from 'node:http';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { OrderService } from './gen/order/v1/order_pb.ts';
import type { Matchers } from './metrics-text.ts';

/** A customer with no orders: the watch sends nothing and stays open until released. */
const HOLD_CUSTOMER = 'rpcscope-demo-drain-hold';

/** The hold's series in rpcscope_calls_active: no other client of the demo watches over Connect. */
export const DRAIN_HOLD: Matchers = { direction: 'inbound', protocol: 'connect', method: (m) => m.endsWith('/WatchOrders') };

export interface DrainHold {
  release(): void;
}

export function holdDrainOpen(sidecarUrl: string): DrainHold {
  const agent = new http.Agent({ keepAlive: false });
  const transport = createConnectTransport({ baseUrl: sidecarUrl, httpVersion: '1.1', acceptCompression: [], nodeOptions: { agent } });
  const client = createClient(OrderService, transport);
  const stop = new AbortController();
  void (async () => {
    try {
      for await (const _event of client.watchOrders({ customer: HOLD_CUSTOMER, maxEvents: 0 }, { signal: stop.signal })) {
        // None come.
      }
    } catch {
      // Released, or ended by the sidecar's drain timeout: either way the hold is over.
    }
  })();
  return {
    release() {
      stop.abort();
      agent.destroy();
    },
  };
}
