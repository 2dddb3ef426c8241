// `npm run demo`: the whole story rpcscope is for, on this machine alone.
// Three order-service pods behind their own inbound sidecars and a
// kube-proxy-like TCP balancer; a storefront migrating from REST to gRPC
// through the balancer, whose one HTTP/2 connection pins a pod; a back-office
// client whose outbound sidecar balances every call; at 40 % of the run,
// --max-connection-age rolled out to the pods' sidecars (the pinned one first)
// so the skew heals. A terminal view redrawn every second, a summary at the
// end, and with Prometheus on PATH a page of the panel on live data.
import { parseDemoArgs } from './demo-args.ts';
import { runStory } from './story-run.ts';

const parsed = parseDemoArgs(process.argv.slice(2));
if ('error' in parsed) {
  process.stderr.write(`${parsed.error}\n`);
  process.exit(2);
}
if ('help' in parsed) {
  process.stdout.write(parsed.help);
  process.exit(0);
}
process.exitCode = await runStory(parsed);
