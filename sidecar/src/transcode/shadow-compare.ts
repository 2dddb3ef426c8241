// What a shadow's answer is compared on: the first field where it differs from
// the primary's, or undefined when they agree. Status first (an HTTP status, a
// gRPC status), then the body: JSON structurally (key order and whitespace do not
// count; the path of the first differing value is named), anything else byte for
// byte.

/** One side's answer, as far as it is compared. */
export interface Answer {
  /** HTTP status (REST) or gRPC status code (gRPC). */
  status: number;
  /** The `status` field's name in the log line: `status` or `grpc-status`. */
  statusName: string;
  body: Buffer;
  /** The body is JSON: compared by value. */
  json: boolean;
}

export interface Difference {
  field: string;
  primary: string;
  shadow: string;
}

function show(v: unknown): string {
  const text = v === undefined ? 'absent' : JSON.stringify(v);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function kind(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/** The first path (`$.items[1].price`) where two JSON values differ; keys in sorted order, so the answer is stable. */
export function firstJsonDifference(a: unknown, b: unknown, path = '$'): Difference | undefined {
  if (kind(a) !== kind(b)) return { field: path, primary: show(a), shadow: show(b) };
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    for (let i = 0; i < Math.min(a.length, bb.length); i++) {
      const d = firstJsonDifference(a[i], bb[i], `${path}[${i}]`);
      if (d) return d;
    }
    return a.length === bb.length ? undefined : { field: `${path}[${Math.min(a.length, bb.length)}]`, primary: show(a[bb.length]), shadow: show(bb[a.length]) };
  }
  if (a !== null && typeof a === 'object') {
    const ao = a as Record<string, unknown>;
    const bo = b as Record<string, unknown>;
    for (const key of [...new Set([...Object.keys(ao), ...Object.keys(bo)])].sort()) {
      const field = /^[A-Za-z_$][\w$]*$/u.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      if (!(key in ao) || !(key in bo)) return { field, primary: show(ao[key]), shadow: show(bo[key]) };
      const d = firstJsonDifference(ao[key], bo[key], field);
      if (d) return d;
    }
    return undefined;
  }
  return a === b ? undefined : { field: path, primary: show(a), shadow: show(b) };
}

function parseJson(body: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) };
  } catch {
    return { ok: false };
  }
}

export function firstDifference(primary: Answer, shadow: Answer): Difference | undefined {
  if (primary.status !== shadow.status) return { field: primary.statusName, primary: String(primary.status), shadow: String(shadow.status) };
  if (primary.json && shadow.json) {
    const a = parseJson(primary.body);
    const b = parseJson(shadow.body);
    if (a.ok && b.ok) return firstJsonDifference(a.value, b.value);
  }
  if (primary.body.equals(shadow.body)) return undefined;
  let at = 0;
  while (at < primary.body.length && at < shadow.body.length && primary.body[at] === shadow.body[at]) at++;
  return { field: `body (byte ${at})`, primary: `${primary.body.length} bytes`, shadow: `${shadow.body.length} bytes` };
}
