// An in-process sidecar for tests: the real listener, proxy and admin port on
// free ports, with a recording observer at the Observer seam so that tests can
// read each call's record.
import { loadConfig, type Config } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { noopTracing } from '../../src/call/call-tracing.ts';
import type { CallRecord } from '../../src/call/call-record.ts';
import type { ConnectionRecord, GoawaySide, Observer } from '../../src/call/observer.ts';
import { startSidecar, type Sidecar } from '../../src/pipeline.ts';

export interface Recorder extends Observer {
  started: CallRecord[];
  ended: CallRecord[];
  opened: ConnectionRecord[];
  closed: ConnectionRecord[];
  goaways: { side: GoawaySide; code: number }[];
  /** Resolves once `n` calls have ended (rejects after `timeoutMs`). */
  waitForEnded(n: number, timeoutMs?: number): Promise<CallRecord[]>;
  /**
   * Resolves with the first ended call that `match` picks, once it has ended
   * (rejects after `timeoutMs`, naming the calls that did end). A test finds its
   * own call's record by what it is — its path, or `since`: only calls started
   * after `started.length` was `since` — never by its place in `ended`, where a
   * call an earlier test left open can end last.
   */
  waitForCall(match: (call: CallRecord) => boolean, opts?: { since?: number; timeoutMs?: number }): Promise<CallRecord>;
}

export function createRecorder(): Recorder {
  const waiters: (() => void)[] = [];
  const notify = (): void => {
    for (const w of waiters.splice(0)) w();
  };
  /** Resolves at the next call end, or after 50 ms at most. */
  const nextEnd = (): Promise<void> =>
    new Promise<void>((resolve) => {
      waiters.push(resolve);
      setTimeout(resolve, 50);
    });
  const r: Recorder = {
    started: [],
    ended: [],
    opened: [],
    closed: [],
    goaways: [],
    callStarted: (c) => r.started.push(c),
    callEnded: (c) => {
      r.ended.push(c);
      notify();
    },
    connectionOpened: (c) => r.opened.push(c),
    connectionClosed: (c) => r.closed.push(c),
    goaway: (side, code) => r.goaways.push({ side, code }),
    async waitForEnded(n, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (r.ended.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} ended calls, saw ${r.ended.length}`);
        await nextEnd();
      }
      return r.ended;
    },
    async waitForCall(match, { since = 0, timeoutMs = 5000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = r.ended.find((c) => match(c) && r.started.indexOf(c) >= since);
        if (found) return found;
        if (Date.now() > deadline) {
          const seen = r.ended.map((c) => `#${c.id} ${c.httpMethod} ${c.path}`).join(', ');
          throw new Error(`no ended call matched within ${timeoutMs} ms${since > 0 ? ` (only calls started after the first ${since})` : ''}; ended: ${seen || 'none'}`);
        }
        await nextEnd();
      }
    },
  };
  return r;
}

export interface TestSidecar {
  sidecar: Sidecar;
  config: Config;
  recorder: Recorder;
  /** `http://127.0.0.1:port` of the proxy port. */
  url: string;
  port: number;
  adminUrl: string;
  stop(): Promise<void>;
}

/**
 * RPCSCOPE_DATA_PLANE and RPCSCOPE_HTTP1_DATA_PLANE from the test's own environment, as the binary would read
 * them: `RPCSCOPE_DATA_PLANE=relay node --test ...` runs these tests on the relay (RPCSCOPE_HTTP1_DATA_PLANE: the HTTP/1.1 relay).
 */
function dataPlaneEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['RPCSCOPE_DATA_PLANE', 'RPCSCOPE_HTTP1_DATA_PLANE', 'RPCSCOPE_OUTBOUND_DATA_PLANE']) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

export async function startTestSidecar(upstreamUrl: string, extraArgs: string[] = []): Promise<TestSidecar> {
  const result = loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', upstreamUrl, '--log-level', 'silent', '--drain-timeout', '2s', ...extraArgs], dataPlaneEnv());
  if (result.kind !== 'run') throw new Error('unexpected help');
  const recorder = createRecorder();
  const sidecar = await startSidecar(result.config, createLogger('silent'), () => ({ observers: [recorder], tracing: noopTracing, adminHandlers: new Map(), shutdown: async () => {} }));
  const port = sidecar.proxyAddress.port;
  return {
    sidecar,
    config: result.config,
    recorder,
    port,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${sidecar.adminAddress.port}`,
    stop: async () => {
      await sidecar.drain();
    },
  };
}
