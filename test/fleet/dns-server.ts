// A real DNS server for endpoint discovery: Debian's dnsmasq (package
// dnsmasq-base) on a loopback port, answering A records from a hosts file, as
// the cluster DNS answers for a headless Service with one record per ready pod.
// Changing the records rewrites the file and sends SIGHUP, which makes dnsmasq
// read it again and drop its cache.
import { spawn } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../support/prometheus.ts';

export const DNSMASQ_BIN = process.env.RPCSCOPE_DNSMASQ ?? '/usr/sbin/dnsmasq';

/** Host name to its IPv4 addresses. */
export type Records = Record<string, readonly string[]>;

export interface DnsServer {
  /** `127.0.0.1:port`, for --dns-server. */
  address: string;
  /** Replaces every record and waits until dnsmasq answers with the new ones. */
  setRecords(records: Records): Promise<void>;
  stop(): Promise<void>;
}

function hostsFile(records: Records): string {
  return Object.entries(records)
    .flatMap(([name, ips]) => ips.map((ip) => `${ip} ${name}\n`))
    .join('');
}

export async function startDnsServer(records: Records): Promise<DnsServer> {
  const dir = await mkdtemp(join(tmpdir(), 'rpcscope-dns-'));
  const file = join(dir, 'hosts');
  await writeFile(file, hostsFile(records));
  const port = await freePort();
  const child = spawn(
    DNSMASQ_BIN,
    // --pid-file= (empty): no pid file, so that several instances can run at once.
    ['--no-daemon', '--no-resolv', '--no-hosts', '--port', String(port), '--listen-address', '127.0.0.1', '--bind-interfaces', '--addn-hosts', file, '--pid-file=', '--log-facility=-'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };

  const address = `127.0.0.1:${port}`;
  const resolver = new Resolver({ timeout: 500, tries: 1 });
  resolver.setServers([address]);
  /** Until every name answers exactly its addresses. */
  const answers = async (want: Records, timeoutMs: number): Promise<void> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`dnsmasq exited with ${child.exitCode}:\n${log}`);
      const got = await Promise.all(Object.keys(want).map((name) => resolver.resolve4(name).then((a) => a.sort(), () => [])));
      if (Object.values(want).every((ips, i) => JSON.stringify([...ips].sort()) === JSON.stringify(got[i]))) return;
      if (Date.now() > until) throw new Error(`dnsmasq does not answer ${JSON.stringify(want)} after ${timeoutMs} ms (answers ${JSON.stringify(got)}):\n${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  try {
    await answers(records, 5000);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    address,
    async setRecords(next) {
      await writeFile(file, hostsFile(next));
      child.kill('SIGHUP');
      await answers(next, 5000);
    },
    stop,
  };
}
