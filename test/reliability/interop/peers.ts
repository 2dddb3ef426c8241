// gRPC implementations in other languages, run as child processes on either
// side of the real binary: grpc-go (interop-go, built here from main.go and the
// files beside it) and gRPC C-core (grpcio, interop_python.py). Both speak the
// same small protocol, so any client can call any server:
//
//   server:  prints its port on the first line of stdout, then one line
//            `ended <method> <code>` each time a Hang call ends
//   client:  `client ADDR CASE` makes one call and prints one JSON line (CallResult)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** Debian's golang-google-grpc-dev installs grpc-go 1.33 here, for GOPATH-mode builds. */
const GOPATH = process.env.RPCSCOPE_GOPATH ?? '/usr/share/gocode';
const PYTHON = process.env.RPCSCOPE_PYTHON_GRPCIO ?? '/usr/bin/python3';

export type Peer = 'go' | 'python';

/** The cases every client knows (see main.go and interop_python.py). */
export const CASES = ['unary', 'stream', 'fail', 'deadline', 'cancel'] as const;
export type Case = (typeof CASES)[number];

/** What one call showed its caller; binary metadata values as hex. */
export interface CallResult {
  /** The gRPC status code (0 OK, 4 DEADLINE_EXCEEDED). */
  code: number;
  message: string;
  messages: string[];
  headers: Record<string, string[]>;
  trailers: Record<string, string[]>;
}

let goBinary: string | undefined;

/**
 * Builds interop-go once per source change: the binary is kept in the temp
 * directory under the hash of its sources, as a GOPATH-mode build of grpc-go
 * takes a while on a busy machine.
 */
export function buildGo(): string {
  if (goBinary) return goBinary;
  const sources = readdirSync(HERE).filter((f) => f.endsWith('.go')).sort();
  const hash = createHash('sha256');
  for (const f of sources) hash.update(f).update(readFileSync(join(HERE, f)));
  const dir = join(tmpdir(), 'rpcscope-interop-go');
  const binary = join(dir, `interop-go-${hash.digest('hex').slice(0, 16)}`);
  if (!existsSync(binary)) {
    if (!existsSync(join(GOPATH, 'src/google.golang.org/grpc'))) {
      throw new Error(`grpc-go is not in ${GOPATH}: install it with apt-get install -y golang-google-grpc-dev (or set RPCSCOPE_GOPATH)`);
    }
    mkdirSync(dir, { recursive: true });
    const partial = `${binary}.${process.pid}`;
    const r = spawnSync('go', ['build', '-o', partial, '.'], {
      cwd: HERE,
      // Its own build cache unless one is set: a test run may have no HOME.
      env: { ...process.env, GO111MODULE: 'off', GOPATH, GOFLAGS: '', GOCACHE: process.env.GOCACHE ?? join(dir, 'gocache') },
      encoding: 'utf8',
    });
    if (r.error || r.status !== 0) throw new Error(`building interop-go failed: ${r.error?.message ?? r.stderr}`);
    // Two test files building at once each write their own, then one wins whole.
    renameSync(partial, binary);
  }
  return (goBinary = binary);
}

function command(peer: Peer): [string, string[]] {
  return peer === 'go' ? [buildGo(), []] : [PYTHON, [join(HERE, 'interop_python.py')]];
}

export interface PeerServer {
  readonly port: number;
  /** The `ended …` lines printed so far. */
  readonly ended: string[];
  kill(): Promise<void>;
}

export function startServer(peer: Peer): Promise<PeerServer> {
  const [cmd, args] = command(peer);
  const child: ChildProcess = spawn(cmd, [...args, 'server'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${peer} server exited (${code}) before it served`)));
    const ended: string[] = [];
    let port = 0;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (port === 0) {
        port = Number(line);
        resolve({
          port,
          ended,
          kill: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
            await exited;
          },
        });
      } else if (line.startsWith('ended ')) ended.push(line);
    });
  });
}

/** Runs one client call of `what` against `address` (host:port) and returns what it saw. */
export function runClient(peer: Peer, address: string, what: Case): Promise<CallResult> {
  const [cmd, args] = command(peer);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...args, 'client', address, what], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`${peer} client ${what} exited ${code}: ${err}`));
      try {
        resolve(JSON.parse(out) as CallResult);
      } catch {
        reject(new Error(`${peer} client ${what} printed ${out} ${err}`));
      }
    });
  });
}
