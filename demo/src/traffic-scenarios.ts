// What the traffic generator asks the order service for, and how often: mostly
// healthy reads with a deadline, some without one, writes, streams, and a
// steady trickle of the errors, slow calls and deadline misses an SRE watches.
import { Code } from '@connectrpc/connect';
import { DELAY_HEADER, FAIL_CODE_HEADER } from './order-operations.ts';

export type OrderCall =
  | { kind: 'get'; id: string }
  | { kind: 'list'; customer: string; pageSize: number }
  | { kind: 'create'; customer: string; items: Array<{ sku: string; quantity: number; unitPriceCents: number }> }
  | { kind: 'watch'; maxEvents: number };

export type Scenario = {
  name: string;
  call: OrderCall;
  /** The caller's deadline; undefined sends none. */
  deadlineMs?: number;
  headers?: Record<string, string>;
};

const CUSTOMERS = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark'];

/** Picks from [0, 1) supplied by the caller, so a seeded run repeats exactly. */
export type Random = () => number;

function pick<T>(items: readonly T[], random: Random): T {
  return items[Math.floor(random() * items.length)] as T;
}

type Template = { weight: number; build(random: Random): Omit<Scenario, 'name'> };

const seededId = (random: Random) => `ord-${String(1 + Math.floor(random() * 24)).padStart(6, '0')}`;

const TEMPLATES: Record<string, Template> = {
  get: { weight: 30, build: (r) => ({ call: { kind: 'get', id: seededId(r) }, deadlineMs: 1000 }) },
  'get-no-deadline': { weight: 10, build: (r) => ({ call: { kind: 'get', id: seededId(r) } }) },
  'get-missing': {
    weight: 6,
    build: (r) => ({ call: { kind: 'get', id: `ord-9${String(Math.floor(r() * 1e5)).padStart(5, '0')}` }, deadlineMs: 1000 }),
  },
  list: { weight: 18, build: (r) => ({ call: { kind: 'list', customer: pick(CUSTOMERS, r), pageSize: 10 }, deadlineMs: 2000 }) },
  'list-no-deadline': { weight: 4, build: () => ({ call: { kind: 'list', customer: '', pageSize: 0 } }) },
  create: {
    weight: 12,
    build: (r) => ({
      call: { kind: 'create', customer: pick(CUSTOMERS, r), items: [{ sku: 'sku-cable', quantity: 1 + Math.floor(r() * 3), unitPriceCents: 499 }] },
      deadlineMs: 2000,
    }),
  },
  'create-invalid': { weight: 3, build: (r) => ({ call: { kind: 'create', customer: pick(CUSTOMERS, r), items: [] }, deadlineMs: 2000 }) },
  slow: {
    weight: 4,
    build: () => ({ call: { kind: 'list', customer: '', pageSize: 50 }, deadlineMs: 2000, headers: { [DELAY_HEADER]: '250' } }),
  },
  'deadline-miss': {
    weight: 3,
    build: (r) => ({ call: { kind: 'get', id: seededId(r) }, deadlineMs: 100, headers: { [DELAY_HEADER]: '400' } }),
  },
  unavailable: {
    weight: 3,
    build: (r) => ({
      call: { kind: 'get', id: seededId(r) },
      deadlineMs: 1000,
      headers: { [FAIL_CODE_HEADER]: String(Code.Unavailable) },
    }),
  },
  watch: { weight: 7, build: () => ({ call: { kind: 'watch', maxEvents: 5 }, deadlineMs: 3000 }) },
};

const TOTAL_WEIGHT = Object.values(TEMPLATES).reduce((sum, t) => sum + t.weight, 0);

export function pickScenario(random: Random): Scenario {
  let at = random() * TOTAL_WEIGHT;
  for (const [name, template] of Object.entries(TEMPLATES)) {
    at -= template.weight;
    if (at < 0) return { name, ...template.build(random) };
  }
  return { name: 'get', ...TEMPLATES.get!.build(random) };
}
