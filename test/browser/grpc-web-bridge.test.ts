// A browser's gRPC-Web client (@connectrpc/connect-web in headless Chromium),
// served from another origin, calling a grpc-js server — which speaks no
// gRPC-Web — through the real rpcscope binary with --grpc-web-bridge and
// --cors-origin: unary, server streaming and an error, then the counts scraped.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { startGrpcJsEcho, type Upstream } from '@rpcscope/demo';
import { eventually } from '../support/eventually.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const CHROMIUM = process.env.RPCSCOPE_CHROMIUM ?? '/usr/bin/chromium';

let upstream: Upstream;
let sidecar: SidecarProcess;
let page: Server;
let pageUrl: string;
let browser: Browser;

before(async () => {
  const bundle = await build({ entryPoints: [join(import.meta.dirname, 'grpc-web-client.ts')], bundle: true, write: false, format: 'iife', platform: 'browser', target: 'chrome120' });
  const script = bundle.outputFiles[0]!.text;
  page = createServer((req, res) => {
    if (req.url === '/client.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><script src="/client.js"></script>');
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  // "localhost" and "127.0.0.1" are different origins: every call is cross-origin, preflighted.
  pageUrl = `http://localhost:${(page.address() as AddressInfo).port}`;
  upstream = await startGrpcJsEcho();
  sidecar = await startSidecarProcess(['--upstream', upstream.url, '--grpc-web-bridge', '--cors-origin', pageUrl]);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'] });
});

after(async () => {
  await browser?.close();
  await sidecar?.stop();
  await upstream?.close();
  page?.closeAllConnections();
  await new Promise((resolve) => page?.close(resolve));
});

it('a browser calls a grpc-js server through the bridge: unary, server streaming and an error', async () => {
  const tab = await browser.newPage();
  await tab.goto(pageUrl);
  await tab.waitForFunction(() => 'echoThroughSidecar' in globalThis);
  const result = await tab.evaluate((base) => globalThis.echoThroughSidecar(base), sidecar.url);
  assert.deepEqual(result, {
    unary: 'from the browser',
    streamed: ['tick#0', 'tick#1', 'tick#2', 'tick#3'],
    error: '[not_found] requested failure',
  });
  // The sidecar counts a call when it has ended there, which can be a moment after
  // the browser has its answer: the counts are waited for, not read once at once.
  // A count past the expected one never matches, and fails at the wait's end.
  await eventually(async () => {
    const metrics = await (await fetch(`${sidecar.adminUrl}/metrics`)).text();
    assert.match(metrics, /^rpcscope_translated_calls_total\{protocol="grpc_web",translation="grpc_web_to_grpc",operation="echo.v1.EchoService\/Echo"\} 2$/mu);
    assert.match(metrics, /^rpcscope_translated_calls_total\{protocol="grpc_web",translation="grpc_web_to_grpc",operation="echo.v1.EchoService\/ServerStream"\} 1$/mu);
    return true;
  }, 'the translated calls counted');
});
