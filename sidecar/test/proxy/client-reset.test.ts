// A caller whose connection is lost mid-call has gone away: CANCELLED, with the
// lost connection counted apart from resets (CONNECTION_CLOSED, as over
// HTTP/1.1), never as an INTERNAL_ERROR reset the client did not send. A real
// RST_STREAM(INTERNAL_ERROR) from a client still counts as INTERNAL.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http2 from 'node:http2';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CONNECTION_CLOSED } from '../../src/call/call-record.ts';
import { decideCode } from '../../src/call/call-outcome.ts';
import { Http2Error } from '../../src/protocol/reset-codes.ts';
import { startGrpcioServer, type ServerProcess } from '../support/server-process.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const RUNS = 40;
const CANCEL_AND_EXIT = fileURLToPath(new URL('../fixtures/clients/grpc-cancel-and-exit.mjs', import.meta.url));
const GRPC_REQUEST = { ':method': 'POST', ':path': '/test.Echo/Stream', 'content-type': 'application/grpc', te: 'trailers' };
const MESSAGE = Buffer.from([0, 0, 0, 0, 2, 0x67, 0x6f]);

/** Opens a server stream on a raw HTTP/2 client and, at its first data, does `cut`. */
function streamThen(url: string, cut: (session: http2.ClientHttp2Session, req: http2.ClientHttp2Stream) => void): Promise<void> {
  return new Promise((resolve) => {
    const session = http2.connect(url);
    session.on('error', () => {});
    const req = session.request(GRPC_REQUEST);
    req.on('error', () => {});
    req.end(MESSAGE);
    req.once('data', () => cut(session, req));
    session.on('close', () => resolve());
  });
}

describe('a caller gone mid-call, to a grpcio server stream', () => {
  let server: ServerProcess;
  let sc: TestSidecar;

  before(async () => {
    server = await startGrpcioServer(['--stream', '100']);
    sc = await startTestSidecar(server.url);
  });
  after(async () => {
    await sc.stop();
    await server.kill();
  });

  it(`is CANCELLED every time in ${RUNS} runs of a grpc-js client that cancels at its first message and exits`, async () => {
    const before = sc.recorder.ended.length;
    for (let i = 0; i < RUNS; i++) {
      const { stdout } = await promisify(execFile)(process.execPath, [CANCEL_AND_EXIT, `127.0.0.1:${sc.port}`]);
      assert.equal(stdout, 'cancelled\n');
    }
    const calls = (await sc.recorder.waitForEnded(before + RUNS)).slice(before);
    const codes = calls.map((c) => decideCode(c));
    assert.deepEqual(codes, Array<string>(RUNS).fill('CANCELLED'));
    for (const c of calls) {
      assert.equal(c.reset?.side, 'client');
      assert.ok(c.reset.code === Http2Error.CANCEL || c.reset.code === CONNECTION_CLOSED, `reset code ${c.reset.code}`);
    }
  });

  it(`is CANCELLED with the connection counted as closed in ${RUNS} runs of a socket reset mid-stream`, async () => {
    const before = sc.recorder.ended.length;
    for (let i = 0; i < RUNS; i++) await streamThen(sc.url, (session) => (session.socket as Socket).resetAndDestroy());
    const calls = (await sc.recorder.waitForEnded(before + RUNS)).slice(before);
    assert.deepEqual(
      calls.map((c) => [decideCode(c), c.reset?.side, c.reset?.code]),
      Array<unknown>(RUNS).fill(['CANCELLED', 'client', CONNECTION_CLOSED]),
    );
  });

  it('is still INTERNAL when the client really sends RST_STREAM(INTERNAL_ERROR)', async () => {
    const before = sc.recorder.ended.length;
    await streamThen(sc.url, (session, req) => {
      req.close(Http2Error.INTERNAL_ERROR);
      req.on('close', () => setTimeout(() => session.close(), 100));
    });
    const [call] = (await sc.recorder.waitForEnded(before + 1)).slice(before);
    assert.equal(decideCode(call!), 'INTERNAL');
    assert.deepEqual(call!.reset, { side: 'client', code: Http2Error.INTERNAL_ERROR });
  });
});
