// The demo's last word: `rpcscope diagnose` (the real command, as a user runs
// it) against the demo's own Prometheus, once over the pinned window, before
// the remedy is rolled out, and once over the healed window after it, so the
// run ends with what the command says of the fleet in each state.
import { spawn } from 'node:child_process';
import { NAMESPACE, SERVICE } from './demo-fleet.ts';
import { RPCSCOPE_BIN } from './sidecar-process.ts';

export interface DiagnoseOutput {
  /** What the window was, in words. */
  label: string;
  args: string[];
  code: number | null;
  text: string;
}

/** `rpcscope diagnose` over the last `sinceMs` (and, with `beforeMs`, against the window [from, to] ms ago). */
export function diagnoseDemo(prometheusUrl: string, label: string, sinceMs: number, beforeMs?: [from: number, to: number]): Promise<DiagnoseOutput> {
  const s = (ms: number): string => `${Math.max(1, Math.round(ms / 1000))}s`;
  // The run is a minute: the protocols the storefront moves away from carry a few dozen calls a window.
  const args = ['diagnose', '--prometheus', prometheusUrl, '--namespace', NAMESPACE, '--service', SERVICE, '--since', s(sinceMs), '--min-calls', '30', ...(beforeMs === undefined ? [] : ['--before', `${s(beforeMs[0])}..${s(beforeMs[1])}`])];
  return new Promise((resolve) => {
    const child = spawn(RPCSCOPE_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    child.once('exit', (code) => resolve({ label, args: ['rpcscope', ...args], code, text }));
  });
}

export function renderDiagnose(runs: readonly DiagnoseOutput[]): string {
  return runs.map((r) => `${r.label}\n$ ${r.args.join(' ')}\n${r.text.trimEnd()}\n(exit status ${r.code})`).join('\n\n');
}
