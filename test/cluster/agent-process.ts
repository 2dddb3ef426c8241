// The test process's handle on one namespace's agent (pod-agent.ts): spawned
// through `ip netns exec`, asked over its IPC channel, which needs no network
// and so keeps working while the namespace is blackholed.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AgentEvent, AgentRequest, CallTally, LoadSpec } from './agent-protocol.ts';

const AGENT = fileURLToPath(new URL('./pod-agent.ts', import.meta.url));

export interface SidecarStarted {
  pid: number;
  listen: string;
  admin: string;
}

export class AgentProcess {
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly exits: ((e: Extract<AgentEvent, { event: 'sidecarExit' }>) => void)[] = [];
  private stderr = '';

  private constructor(readonly ns: string, private readonly proc: ChildProcess) {
    proc.on('message', (msg: { id?: number; ok?: boolean; result?: unknown; error?: string } & Partial<AgentEvent>) => {
      if (msg.event === 'sidecarExit') {
        for (const f of this.exits) f(msg as Extract<AgentEvent, { event: 'sidecarExit' }>);
        return;
      }
      if (msg.id === undefined) return;
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.ok) p?.resolve(msg.result);
      else p?.reject(new Error(`${ns}: ${msg.error}`));
    });
    proc.stderr!.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-20_000)));
    proc.once('exit', (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`${ns}: agent exited with ${code}:\n${this.stderr}`));
      this.pending.clear();
    });
  }

  /** Starts the agent inside `ns` and waits until it answers. */
  static async start(ns: string): Promise<AgentProcess> {
    const proc = spawn('ip', ['netns', 'exec', ns, process.execPath, '--import', 'tsx', AGENT], {
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      env: { ...process.env, PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` },
    });
    const agent = new AgentProcess(ns, proc);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${ns}: agent did not start within 20 s:\n${agent.stderr}`)), 20_000);
      proc.on('message', (m: Partial<AgentEvent>) => {
        if (m.event !== 'ready') return;
        clearTimeout(timer);
        resolve();
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${ns}: agent exited with ${code} before it was ready:\n${agent.stderr}`));
      });
    });
    return agent;
  }

  request<T>(req: AgentRequest): Promise<T> {
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      if (!this.proc.connected) return reject(new Error(`${this.ns}: agent is gone`));
      this.proc.send({ id, ...req });
    });
  }

  startApp(host: string, port: number, podName: string): Promise<{ port: number }> {
    return this.request({ op: 'startApp', host, port, podName });
  }

  stopApp(): Promise<void> {
    return this.request({ op: 'stopApp' });
  }

  startSidecar(args: string[], env: Record<string, string> = {}): Promise<SidecarStarted> {
    return this.request({ op: 'startSidecar', args, env });
  }

  sidecarLog(): Promise<string> {
    return this.request<{ log: string }>({ op: 'sidecarLog' }).then((r) => r.log);
  }

  /** Fires once for each exit of the sidecar this agent started. */
  onSidecarExit(f: (e: { pid: number; code: number | null; signal: string | null }) => void): void {
    this.exits.push(f);
  }

  /** An HTTP request from inside the namespace; rejects only when nothing answered. */
  fetch(url: string, timeoutMs?: number): Promise<{ status: number; body: string }> {
    return this.request({ op: 'fetch', url, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
  }

  resolve4(name: string, server: string): Promise<string[]> {
    return this.request<{ addresses: string[] }>({ op: 'resolve', name, server }).then((r) => r.addresses);
  }

  load(spec: LoadSpec): Promise<CallTally[]> {
    return this.request<{ tally: CallTally[] }>({ op: 'load', spec }).then((r) => r.tally);
  }

  closeClients(): Promise<void> {
    return this.request({ op: 'closeClients' });
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** Ends the agent (its sidecar with it, through the agent's disconnect handler). */
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.proc.once('exit', () => r()));
    if (this.proc.connected) this.proc.disconnect();
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  }
}
