// The upstream comes from configuration only: a Host header, an HTTP/2
// :authority or a request target naming another server never sends a call
// there. A decoy server that records every request stands where a client asks
// to go, and receives nothing. The admin port binds where --admin says (a
// loopback address keeps it to the pod) and --debug-endpoints false takes
// /debug/* off it.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { rawConnect } from '../support/raw-client.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../support/recording-upstream.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

/** The response's :status, or the code of the RST_STREAM that ended the stream instead. */
function h2Request(url: string, headers: http2.OutgoingHttpHeaders): Promise<number | string> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on('error', reject);
    const req = session.request(headers);
    let status = 0;
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('error', () => {});
    req.resume();
    req.on('close', () => {
      session.close();
      resolve(req.rstCode ? `RST_STREAM ${req.rstCode}` : status);
    });
  });
}

async function rawH1(port: number, head: string): Promise<string> {
  const c = await rawConnect(port);
  c.socket.write(head);
  await Promise.race([c.closed, new Promise((r) => setTimeout(r, 1000))]);
  c.socket.destroy();
  return c.received().toString('latin1').split('\r\n')[0]!;
}

/** The admin address rpcscope says it bound, from its start-up line. */
function adminAddress(sc: SidecarProcess): string {
  const line = sc.log().split('\n').find((l) => l.includes('"rpcscope started"'))!;
  return (JSON.parse(line) as { admin: string }).admin;
}

describe('rpcscope binary is not an open proxy', () => {
  let upstream: RecordingUpstream;
  let decoy: RecordingUpstream;
  let sc: SidecarProcess;
  before(async () => {
    upstream = await startRecordingUpstream();
    decoy = await startRecordingUpstream();
    sc = await startSidecarProcess(['--upstream', upstream.url]);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
    await decoy.close();
  });

  it('sends calls naming another server by Host, :authority or URI to the configured upstream or nowhere', async () => {
    const elsewhere = `127.0.0.1:${decoy.port}`;
    assert.match(await rawH1(sc.port, `GET /by-host HTTP/1.1\r\nhost: ${elsewhere}\r\n\r\n`), /^HTTP\/1\.1 200 /);
    assert.match(await rawH1(sc.port, `GET http://${elsewhere}/by-uri HTTP/1.1\r\nhost: ${elsewhere}\r\n\r\n`), /^HTTP\/1\.1 400 /);
    assert.match(await rawH1(sc.port, `CONNECT ${elsewhere} HTTP/1.1\r\nhost: ${elsewhere}\r\n\r\n`), /^HTTP\/1\.1 405 /);
    assert.equal(await h2Request(sc.url, { ':path': '/by-authority', ':authority': elsewhere }), 200);
    // RFC 9113 §8.3.1: :path is the origin-form; nghttp2 resets a stream with a URI there as malformed.
    assert.equal(await h2Request(sc.url, { ':path': `http://${elsewhere}/by-h2-uri`, ':authority': elsewhere }), `RST_STREAM ${http2.constants.NGHTTP2_PROTOCOL_ERROR}`);
    assert.deepEqual(decoy.received, [], 'the server the client named received nothing');
    assert.deepEqual(upstream.received.map((r) => `${r.httpVersion} ${r.url}`), ['1.1 /by-host', '2.0 /by-authority']);
    assert.equal(sc.proc.exitCode, null, 'rpcscope is alive');
  });
});

describe('rpcscope admin port', () => {
  let upstream: RecordingUpstream;
  before(async () => (upstream = await startRecordingUpstream()));
  after(() => upstream.close());

  it('binds to the loopback address --admin names, and only there', async () => {
    // 127.0.0.2 is loopback too, but another address: a port bound there is not reachable on 127.0.0.1.
    const sc = await startSidecarProcess(['--upstream', upstream.url, '--admin', '127.0.0.2:0']);
    try {
      const at = adminAddress(sc);
      assert.match(at, /^127\.0\.0\.2:\d+$/);
      const port = Number(at.split(':')[1]);
      assert.equal((await fetch(`http://127.0.0.2:${port}/healthz`)).status, 200);
      const refused = await new Promise<string>((resolve) => {
        const s = net.connect(port, '127.0.0.1');
        s.once('connect', () => (s.destroy(), resolve('connected')));
        s.once('error', (err: Error & { code?: string }) => resolve(err.code ?? err.message));
      });
      assert.equal(refused, 'ECONNREFUSED');
    } finally {
      await sc.stop();
    }
  });

  it('serves /debug/connections by default and not with --debug-endpoints false', async () => {
    for (const [args, status] of [[[], 200], [['--debug-endpoints', 'false'], 404]] as const) {
      const sc = await startSidecarProcess(['--upstream', upstream.url, ...args]);
      try {
        const res = await fetch(`${sc.adminUrl}/debug/connections`);
        await res.text();
        assert.equal(res.status, status, `/debug/connections with ${JSON.stringify(args)}`);
        assert.equal((await fetch(`${sc.adminUrl}/metrics`)).status, 200, '/metrics stays');
      } finally {
        await sc.stop();
      }
    }
  });
});
