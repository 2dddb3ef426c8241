// Acceptance: a rapid-reset flood (CVE-2023-44487: open a stream, cancel it at
// once, as fast as possible) from one raw HTTP/2 client against the real
// `sidecar/bin/rpcscope`, twenty rounds in a row. After each round the process is
// alive and another client's gRPC call (on a connection open all along) and a
// fresh REST call are answered; the flooding connection was cut, with GOAWAY
// ENHANCE_YOUR_CALM.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { startConnectEcho, type Upstream } from '@rpcscope/demo';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const ROUNDS = 20;
/**
 * A round stops, uncut, once the client has reset this many streams. The
 * sidecar's budget (sidecar/src/h2/reset-budget.ts) is a burst of 200 and 33
 * more a second; this client resets them 100 at a time, so only a client slower
 * than a burst every 2 s would stay under it for 5,000 streams. A round ends on
 * what the sidecar does, not on how fast this machine lets the client flood.
 */
const ROUND_STREAMS = 5000;
/** Only a safety net for a sidecar that neither cuts nor lets the client go on. */
const ROUND_MS = 60_000;
const EMPTY_MESSAGE = Buffer.from([0, 0, 0, 0, 0]);
const GRPC_HEADERS = { ':method': 'POST', ':path': '/echo.v1.EchoService/Echo', 'content-type': 'application/grpc', te: 'trailers' };

interface Round {
  opened: number;
  /** The GOAWAY code the sidecar sent, if one arrived before the connection closed. */
  goaway: number | undefined;
  /** Whether the sidecar closed the connection (rather than the round running out). */
  cut: boolean;
}

function flood(url: string): Promise<Round> {
  return new Promise((resolve) => {
    const session = http2.connect(url);
    session.on('error', () => {});
    let opened = 0;
    let goaway: number | undefined;
    let done = false;
    const finish = (cut: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      session.destroy();
      resolve({ opened, goaway, cut });
    };
    const timer = setTimeout(() => finish(false), ROUND_MS);
    session.on('goaway', (code) => (goaway = code));
    session.on('close', () => finish(true));
    const burst = (): void => {
      if (done) return;
      if (session.closed || session.destroyed) return finish(true);
      if (opened >= ROUND_STREAMS) return finish(false);
      for (let i = 0; i < 100; i++) {
        const stream = session.request(GRPC_HEADERS);
        stream.on('error', () => {});
        stream.close(http2.constants.NGHTTP2_CANCEL);
        opened++;
      }
      setImmediate(burst);
    };
    session.once('connect', burst);
  });
}

function grpcEcho(session: http2.ClientHttp2Session): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const req = session.request(GRPC_HEADERS);
    let status: string | undefined;
    req.on('trailers', (t) => (status = String(t['grpc-status'])));
    req.on('response', (h) => {
      if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
    });
    req.on('error', reject);
    req.on('close', () => resolve(status));
    req.resume();
    req.end(EMPTY_MESSAGE);
  });
}

describe('rpcscope binary under a rapid-reset flood', () => {
  let upstream: Upstream;
  let sc: SidecarProcess;
  let bystander: http2.ClientHttp2Session;
  before(async () => {
    upstream = await startConnectEcho();
    sc = await startSidecarProcess(['--upstream', upstream.url]);
    bystander = http2.connect(sc.url);
  });
  after(async () => {
    bystander.close();
    await sc.stop();
    await upstream.close();
  });

  it(`stays up and serves other clients through ${ROUNDS} rounds, cutting each flooding connection`, async () => {
    const rounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const round = await flood(sc.url);
      rounds.push(round);
      assert.equal(sc.proc.exitCode, null, `round ${i + 1}: rpcscope exited\n${sc.log().slice(-2000)}`);
      assert.equal(await grpcEcho(bystander), '0', `round ${i + 1}: the other client's gRPC call`);
      const rest = await fetch(`${sc.url}/v1/echo/after-${i}`);
      assert.equal(rest.status, 200, `round ${i + 1}: a REST call`);
      await rest.text();
    }
    // Every flood is cut, each with ENHANCE_YOUR_CALM, and each cut is counted once,
    // as a termination and as the GOAWAY sent.
    assert.deepEqual(rounds.filter((r) => !r.cut), [], `floods not cut: ${JSON.stringify(rounds)}`);
    for (const r of rounds) assert.equal(r.goaway, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, `GOAWAY code: ${JSON.stringify(r)}`);
    const metrics = await (await fetch(`${sc.adminUrl}/metrics`)).text();
    const terminated = Number(/^rpcscope_connections_terminated_total\{reason="reset_flood"\} (\d+)$/m.exec(metrics)?.[1]);
    const calmGoaways = Number(/^rpcscope_http2_goaways_total\{side="proxy",error_code="ENHANCE_YOUR_CALM"\} (\d+)$/m.exec(metrics)?.[1]);
    assert.equal(terminated, ROUNDS, 'reset_flood terminations');
    assert.equal(calmGoaways, ROUNDS, 'ENHANCE_YOUR_CALM GOAWAYs sent');
    assert.doesNotMatch(metrics, /^rpcscope_internal_errors_total\{[^}]*\} [1-9]/m);
  });
});
