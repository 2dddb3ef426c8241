// HTTP/1.1 requests a proxy must not pass on, written byte for byte on raw TCP
// to the real `sidecar/bin/rpcscope`: the request smuggling shapes (RFC 9112
// §6.3, §5.2 obs-fold, §2.2 bare LF), a request target naming another server
// (absolute-form), CONNECT, and a head too large. Each is answered 400, 405 or
// 431 and its connection closed; the upstream, which records every request it
// receives, receives none of them, while an ordinary request after them all
// reaches it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rawConnect, terminated } from '../support/raw-client.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../support/recording-upstream.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const CASES: { name: string; head: string; status: number }[] = [
  { name: 'Content-Length with Transfer-Encoding', head: 'POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n', status: 400 },
  { name: 'two differing Content-Lengths', head: 'POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 40\r\n\r\nhello', status: 400 },
  { name: 'Content-Length list', head: 'POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 5, 40\r\n\r\nhello', status: 400 },
  { name: 'Transfer-Encoding other than chunked last', head: 'POST /a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked, identity\r\n\r\n0\r\n\r\n', status: 400 },
  { name: 'obs-fold', head: 'GET /a HTTP/1.1\r\nhost: x\r\nx-folded: one\r\n two\r\n\r\n', status: 400 },
  { name: 'bare LF line ends', head: 'GET /a HTTP/1.1\nhost: x\n\n', status: 400 },
  { name: 'bare LF inside a header line', head: 'GET /a HTTP/1.1\r\nhost: x\r\nx-a: b\nx-b: c\r\n\r\n', status: 400 },
  { name: 'space before the colon', head: 'GET /a HTTP/1.1\r\nhost: x\r\ntransfer-encoding : chunked\r\n\r\n0\r\n\r\n', status: 400 },
  { name: 'absolute-form target', head: 'GET http://127.0.0.1:1/steal HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n', status: 400 },
  { name: 'absolute-form target to the upstream itself', head: 'GET http://UPSTREAM/a HTTP/1.1\r\nhost: UPSTREAM\r\n\r\n', status: 400 },
  { name: 'CONNECT', head: 'CONNECT 127.0.0.1:1 HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n', status: 405 },
  { name: 'a head over 16 KiB', head: `GET /a HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, status: 431 },
  { name: 'ten thousand small headers', head: `GET /a HTTP/1.1\r\nhost: x\r\n${'x-h: 1\r\n'.repeat(10_000)}\r\n`, status: 431 },
];

describe('rpcscope binary and malformed or hostile HTTP/1.1 requests', () => {
  let upstream: RecordingUpstream;
  let sc: SidecarProcess;
  before(async () => {
    upstream = await startRecordingUpstream();
    sc = await startSidecarProcess(['--upstream', upstream.url]);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  for (const c of CASES) {
    it(`answers ${c.status} to ${c.name}, closes, forwards nothing`, async () => {
      const before = await terminated(sc.adminUrl, 'bad_request');
      const client = await rawConnect(sc.port);
      client.socket.write(c.head.replaceAll('UPSTREAM', `127.0.0.1:${upstream.port}`));
      await Promise.race([client.closed, new Promise((r) => setTimeout(r, 5000))]);
      assert.notEqual(client.closedAt, undefined, 'the connection was closed');
      const answer = client.received().toString('latin1');
      assert.match(answer.split('\r\n')[0]!, new RegExp(`^HTTP/1\\.1 ${c.status} `), answer);
      assert.equal(answer.match(/^HTTP\/1\.1 /gm)?.length, 1, `one answer only: ${answer}`);
      if (c.status === 405) assert.match(answer, /^allow: /im);
      assert.deepEqual(upstream.received, [], 'the upstream received nothing');
      assert.equal(await terminated(sc.adminUrl, 'bad_request'), before + 1);
      assert.equal(sc.proc.exitCode, null, 'rpcscope is alive');
    });
  }

  it('still forwards an ordinary request', async () => {
    const res = await fetch(`${sc.url}/ok`);
    assert.equal(res.status, 200);
    await res.text();
    assert.deepEqual(upstream.received.map((r) => `${r.method} ${r.url}`), ['GET /ok']);
  });
});
