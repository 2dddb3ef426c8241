// One interop suite for any pair of gRPC implementations (peers.ts): each case
// is called once straight at the server and once through the real binary, and
// the client must see the same thing both ways — status, message, every
// message, repeated metadata keys (text and -bin) as separate values in
// headers and trailers — and what the gRPC spec says it must see. The server
// must see a deadline or a cancel end its call, and /metrics must count each
// call once with the code its client saw.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { parseExposition, sum } from '../../support/metrics-text.ts';
import { reportFigure } from '../../support/reliability-figures.ts';
import { startSidecarProcess, type SidecarProcess } from '../../support/sidecar-process.ts';
import { CASES, runClient, startServer, type CallResult, type Case, type Peer, type PeerServer } from './peers.ts';

const NAMES: Record<Peer, string> = { go: 'grpc-go', python: 'gRPC C-core (grpcio)' };

/** The x-peer-* fields every client sends: keys repeated, binary values as hex. */
const SENT = { 'x-peer-twice': ['first', 'second'], 'x-peer-twice-bin': ['0001', 'fffefd'] };

/** What the gRPC spec has the client see in each case, whoever answers. */
function expected(what: Case, r: CallResult): void {
  switch (what) {
    case 'unary':
      assert.equal(r.code, status.OK, r.message);
      assert.deepEqual(r.messages.map((m) => JSON.parse(m) as unknown), [SENT], 'the server received each repeated key as separate values');
      assert.deepEqual(r.headers, SENT);
      assert.deepEqual(r.trailers, SENT);
      break;
    case 'stream':
      assert.equal(r.code, status.OK, r.message);
      assert.deepEqual(r.messages, Array.from({ length: 50 }, (_, i) => String(i)));
      break;
    case 'fail':
      assert.equal(r.code, status.FAILED_PRECONDITION);
      assert.equal(r.message, 'the order is closed: ünïcode');
      assert.deepEqual(r.trailers, { 'x-peer-reason': ['precondition'] });
      break;
    case 'deadline':
      assert.equal(r.code, status.DEADLINE_EXCEEDED, r.message);
      break;
    case 'cancel':
      assert.equal(r.code, status.CANCELLED, r.message);
      break;
  }
}

/** A deadline or a cancel is decided by a race of timers (client, server, sidecar): its message may differ. */
const comparable = (what: Case, r: CallResult): Partial<CallResult> => (what === 'deadline' || what === 'cancel' ? { code: r.code, messages: r.messages } : r);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `plane`: the sidecar's data plane, inbound (its default relay) or the balanced relay of an outbound sidecar. */
export function describeInterop(client: Peer, server: Peer, plane: 'inbound' | 'balanced' = 'inbound'): void {
  const scenario = `${NAMES[client]} client → rpcscope${plane === 'balanced' ? ' (outbound, balanced relay)' : ''} → ${NAMES[server]} server`;
  const planeArgs = plane === 'balanced' ? ['--mode', 'outbound', '--outbound-data-plane', 'relay'] : [];
  describe(scenario, () => {
    let peer: PeerServer;
    let sc: SidecarProcess;
    let matched = 0;

    before(async () => {
      peer = await startServer(server);
      sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${peer.port}`, '--upstream-protocol', 'http2', '--log-level', 'info', ...planeArgs]);
    });
    after(async () => {
      await sc.stop();
      await peer.kill();
      reportFigure({ section: 'interop', scenario, name: 'cases as seen without the sidecar', value: `${matched}/${CASES.length}` });
    });

    for (const what of CASES) {
      it(`${what}: the same as without the sidecar`, async () => {
        const endedBefore = peer.ended.length;
        const direct = await runClient(client, `127.0.0.1:${peer.port}`, what);
        const proxied = await runClient(client, `127.0.0.1:${sc.port}`, what);
        expected(what, direct);
        expected(what, proxied);
        assert.deepEqual(comparable(what, proxied), comparable(what, direct));
        if (what === 'deadline' || what === 'cancel') {
          // The server's call ended too, through the sidecar as straight: nothing stays open upstream.
          const end = Date.now() + 20_000;
          while (peer.ended.length < endedBefore + 2 && Date.now() < end) await sleep(20);
          assert.equal(peer.ended.length, endedBefore + 2, `the server saw ${peer.ended.length - endedBefore} of 2 calls end`);
        }
        matched++;
      });
    }

    it('counts each proxied call once, with the code its client saw, and none still active', async () => {
      // A call is counted once both its sides have closed, which may be a moment after its client and server are done.
      const scrape = async (): Promise<ReturnType<typeof parseExposition>> => parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text());
      let m = await scrape();
      for (const end = Date.now() + 10_000; sum(m, 'rpcscope_calls_active', {}) > 0 && Date.now() < end; m = await scrape()) await sleep(50);
      const codes = ['OK', 'FAILED_PRECONDITION', 'DEADLINE_EXCEEDED', 'CANCELLED'].map((code) => [code, sum(m, 'rpcscope_calls_total', { protocol: 'grpc', code })]);
      assert.deepEqual(codes, [
        ['OK', 2],
        ['FAILED_PRECONDITION', 1],
        ['DEADLINE_EXCEEDED', 1],
        ['CANCELLED', 1],
      ]);
      assert.equal(sum(m, 'rpcscope_calls_total', {}), CASES.length);
      assert.equal(sum(m, 'rpcscope_calls_active', {}), 0);
    });
  });
}
