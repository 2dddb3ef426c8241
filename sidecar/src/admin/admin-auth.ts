// Who may read /debug/* (client addresses, connection ages, the tap's every
// call). The admin port listens on all addresses so that Prometheus can scrape
// it, so /metrics, /healthz and /readyz stay open; /debug/* answers a caller on
// the pod's loopback (kubectl port-forward, kubectl exec, a container of the
// pod) or one presenting the bearer token of --admin-token-file, as Envoy's
// admin is kept to localhost and Linkerd's tap to RBAC. The file is mounted
// from a Secret, which the kubelet replaces in place when it rotates: it is
// read again whenever its modification time or size changes.
//
// Refusals are counted in rpcscope_admin_requests_refused_total{reason}:
// `unauthenticated` (401: not loopback and no token presented, or no token
// file to check one against), `forbidden` (403: a token that does not match).
import { timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type http from 'node:http';
import { ValueFamily, type MetricFamily, type ValueCell } from '../observe/metric-cells.ts';

export const REFUSAL_REASONS = ['unauthenticated', 'forbidden'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (a dual-stack listener's view of 127.0.0.1). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

export class AdminAuth {
  private readonly family = new ValueFamily('rpcscope_admin_requests_refused_total', 'Admin requests to /debug/* refused: not from loopback and without the right bearer token.', 'counter');
  private readonly cells = new Map<RefusalReason, ValueCell>(REFUSAL_REASONS.map((reason) => [reason, this.family.cell({ reason })]));
  private token: Buffer | undefined;
  private seen = '';

  /** `tokenFile`: the path of --admin-token-file; undefined lets only loopback callers in. */
  constructor(private readonly tokenFile: string | undefined) {}

  /** Whether `req` may be answered; if not, answers 401 or 403 itself and counts the refusal. */
  admit(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    if (isLoopback(req.socket.remoteAddress)) return true;
    const presented = /^Bearer\s+(\S+)\s*$/iu.exec(req.headers.authorization ?? '')?.[1];
    const token = this.currentToken();
    if (presented === undefined || token === undefined) return this.refuse(res, 'unauthenticated');
    const given = Buffer.from(presented);
    if (given.length !== token.length || !timingSafeEqual(given, token)) return this.refuse(res, 'forbidden');
    return true;
  }

  /** Served on /metrics and pushed over OTLP with the call metrics. */
  get families(): readonly MetricFamily[] {
    return [this.family];
  }

  private refuse(res: http.ServerResponse, reason: RefusalReason): false {
    this.cells.get(reason)!.value++;
    const status = reason === 'unauthenticated' ? 401 : 403;
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'text/plain' };
    if (status === 401) headers['www-authenticate'] = 'Bearer realm="rpcscope admin"';
    res.writeHead(status, headers).end(
      status === 401
        ? `/debug/* answers loopback callers, or a bearer token from --admin-token-file${this.tokenFile === undefined ? ' (none is set)' : ''}\n`
        : 'wrong bearer token\n',
    );
    return false;
  }

  /** The file's token, read again when the file changed; undefined when there is none to compare with. */
  private currentToken(): Buffer | undefined {
    if (this.tokenFile === undefined) return undefined;
    try {
      const st = statSync(this.tokenFile);
      const version = `${st.mtimeMs}:${st.size}:${st.ino}`;
      if (version !== this.seen) {
        const text = readFileSync(this.tokenFile, 'utf8').trim();
        this.token = text === '' ? undefined : Buffer.from(text);
        this.seen = version;
      }
    } catch {
      // A Secret mid-rotation may be briefly absent: no token, so nobody from outside, until it is back.
      this.token = undefined;
      this.seen = '';
    }
    return this.token;
  }
}
