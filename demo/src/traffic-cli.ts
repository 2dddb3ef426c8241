// Prints the per-protocol counts as JSON when the run ends; Ctrl-C stops early
// and still prints them. Flags: see TRAFFIC_USAGE.
import { runTraffic } from './traffic.ts';
import { parseTrafficArgs } from './traffic-args.ts';

async function main(): Promise<void> {
  const options = parseTrafficArgs(process.argv.slice(2));
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  const result = await runTraffic({ ...options, signal: stop.signal });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`traffic: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 2;
});
