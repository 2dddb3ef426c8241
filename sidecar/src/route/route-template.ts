// REST route templates (`GET /v1/orders/{id}`): parsed once from configuration,
// an OpenAPI document or google.api.http rules, and matched per call by a
// segment trie, so that matching costs one walk of the path whatever the number
// of routes.

/** RFC 9110 §9 methods. Any other token is folded into `_OTHER`: a custom method is unbounded input. */
export const HTTP_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

export interface RestRoute {
  /** Upper-case HTTP method. */
  readonly httpMethod: string;
  /** Path template: `/`-separated literals and `{name}` parameters; `{name=**}` matches the rest of the path. */
  readonly template: string;
}

/** The `method` label of a REST route: HTTP method, space, template. */
export function restMethodLabel(route: RestRoute): string {
  return `${route.httpMethod} ${route.template}`;
}

type Segment =
  | { kind: 'literal'; text: string }
  | { kind: 'param' }
  /** Literals and parameters within one segment, e.g. `{name}.json` or `{name}:cancel`. */
  | { kind: 'pattern'; source: string; re: RegExp }
  /** `{name=**}` (google.api.http), optionally followed by a literal suffix such as `:cancel`; always last. */
  | { kind: 'rest'; suffix: string };

const PARAM_NAME = /^[^{}/=\s]+$/;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function parseSegment(seg: string, last: boolean): Segment {
  if (!seg.includes('{') && !seg.includes('}')) return { kind: 'literal', text: seg };
  const rest = /^\{([^{}/=\s]+)=\*\*\}([^{}]*)$/.exec(seg);
  if (rest !== null) {
    if (!last) throw new Error(`"{${rest[1]}=**}" must be the last segment`);
    return { kind: 'rest', suffix: rest[2]! };
  }
  const param = /^\{([^{}]*)\}$/.exec(seg);
  if (param !== null) {
    if (!PARAM_NAME.test(param[1]!)) throw new Error(`bad parameter name "${param[1]}" in segment "${seg}"`);
    return { kind: 'param' };
  }
  let source = '^';
  let i = 0;
  let previousWasParam = false;
  while (i < seg.length) {
    const open = seg.indexOf('{', i);
    const literal = open === -1 ? seg.slice(i) : seg.slice(i, open);
    if (literal.includes('}')) throw new Error(`unbalanced "}" in segment "${seg}"`);
    if (literal !== '') previousWasParam = false;
    source += escapeRegExp(literal);
    if (open === -1) break;
    const close = seg.indexOf('}', open);
    const name = close === -1 ? '' : seg.slice(open + 1, close);
    if (close === -1 || !PARAM_NAME.test(name)) throw new Error(`bad parameter in segment "${seg}"`);
    // Two parameters side by side have no boundary between them to match on.
    if (previousWasParam) throw new Error(`adjacent parameters in segment "${seg}"`);
    source += '[^/]+?';
    previousWasParam = true;
    i = close + 1;
  }
  source += '$';
  return { kind: 'pattern', source, re: new RegExp(source) };
}

/** Parse a path template; throws an Error saying what is wrong with it. */
export function parseTemplate(template: string): Segment[] {
  if (!template.startsWith('/')) throw new Error(`template "${template}" must start with "/"`);
  if (/[\s?#]/.test(template)) throw new Error(`template "${template}" must not contain whitespace, "?" or "#"`);
  const parts = template.split('/').slice(1);
  try {
    return parts.map((p, i) => parseSegment(p, i === parts.length - 1));
  } catch (e) {
    throw new Error(`template "${template}": ${(e as Error).message}`, { cause: e });
  }
}

/** Parse `GET /v1/orders/{id}`; throws an Error saying what is wrong with it. */
export function parseRoute(text: string): RestRoute {
  const m = /^(\S+)\s+(\S+)$/.exec(text.trim());
  if (m === null) throw new Error(`"${text}" is not "<METHOD> <path template>", e.g. "GET /v1/orders/{id}"`);
  const httpMethod = m[1]!.toUpperCase();
  if (!HTTP_METHODS.has(httpMethod)) throw new Error(`"${m[1]}" is not an HTTP method (${[...HTTP_METHODS].join(', ')})`);
  parseTemplate(m[2]!);
  return { httpMethod, template: m[2]! };
}

class Node {
  readonly literals = new Map<string, Node>();
  readonly patterns: { source: string; re: RegExp; node: Node }[] = [];
  param: Node | undefined;
  readonly rests: { suffix: string; labels: Map<string, string> }[] = [];
  /** HTTP method -> `method` label of the route ending here. */
  readonly labels = new Map<string, string>();
}

export class RouteTable {
  private readonly root = new Node();
  private count = 0;

  get size(): number {
    return this.count;
  }

  /**
   * Adds a route. A route equal to one already present but for its parameter
   * names (the same API described by two sources) keeps the first one's label.
   */
  add(route: RestRoute): void {
    const segments = parseTemplate(route.template);
    let node = this.root;
    for (const seg of segments) {
      switch (seg.kind) {
        case 'literal': {
          let next = node.literals.get(seg.text);
          if (next === undefined) node.literals.set(seg.text, (next = new Node()));
          node = next;
          break;
        }
        case 'param':
          node = node.param ??= new Node();
          break;
        case 'pattern': {
          let p = node.patterns.find((x) => x.source === seg.source);
          if (p === undefined) node.patterns.push((p = { source: seg.source, re: seg.re, node: new Node() }));
          node = p.node;
          break;
        }
        case 'rest': {
          let r = node.rests.find((x) => x.suffix === seg.suffix);
          if (r === undefined) node.rests.push((r = { suffix: seg.suffix, labels: new Map() }));
          this.label(r.labels, route);
          return;
        }
      }
    }
    this.label(node.labels, route);
  }

  private label(labels: Map<string, string>, route: RestRoute): void {
    if (labels.has(route.httpMethod)) return;
    labels.set(route.httpMethod, restMethodLabel(route));
    this.count++;
  }

  /** The `method` label of the route a request matches, or undefined. Literal segments win over parameters. */
  match(httpMethod: string, path: string): string | undefined {
    if (this.count === 0 || path.charCodeAt(0) !== 47 /* "/" */) return undefined;
    return matchFrom(this.root, path.split('/'), 1, httpMethod);
  }
}

function matchFrom(node: Node, segs: string[], i: number, httpMethod: string): string | undefined {
  if (i === segs.length) return node.labels.get(httpMethod);
  const seg = segs[i]!;
  const literal = node.literals.get(seg);
  if (literal !== undefined) {
    const found = matchFrom(literal, segs, i + 1, httpMethod);
    if (found !== undefined) return found;
  }
  for (const p of node.patterns) {
    if (p.re.test(seg)) {
      const found = matchFrom(p.node, segs, i + 1, httpMethod);
      if (found !== undefined) return found;
    }
  }
  if (seg !== '' && node.param !== undefined) {
    const found = matchFrom(node.param, segs, i + 1, httpMethod);
    if (found !== undefined) return found;
  }
  const lastSeg = segs[segs.length - 1]!;
  for (const r of node.rests) {
    if (lastSeg.length > r.suffix.length && lastSeg.endsWith(r.suffix)) {
      const found = r.labels.get(httpMethod);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
