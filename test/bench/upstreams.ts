// The fast upstreams of the load benchmark, so that a proxy's cost is not
// hidden behind the app's: nghttpd (Debian nghttp2-server) answers every
// HTTP/2 POST with the file at its path, in h2c or TLS, and an nginx serves the
// same files over HTTP/1.1 for the REST rows. Neither is pinned.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { freePort, waitForPort } from './bench-stats.ts';

export interface Upstream {
  url: string;
  /** The server's process, whose /proc/<pid>/io tells what it wrote (nghttpd only). */
  pid?: number;
  stop(): void;
}

const PATH = `${process.env.PATH}${delimiter}/usr/sbin${delimiter}/sbin`;

export async function startNghttpd(docroot: string, tls?: { certFile: string; keyFile: string }): Promise<Upstream> {
  const port = await freePort();
  const args = tls ? ['-d', docroot, String(port), tls.keyFile, tls.certFile] : ['--no-tls', '-d', docroot, String(port)];
  const proc = spawn('nghttpd', args, { stdio: 'ignore', env: { ...process.env, PATH } });
  await waitForPort(port, 'nghttpd');
  return { url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`, pid: proc.pid, stop: () => void proc.kill('SIGTERM') };
}

export async function startStaticNginx(work: string, docroot: string): Promise<Upstream> {
  if (spawnSync('sh', ['-c', 'command -v nginx'], { env: { ...process.env, PATH } }).status !== 0) throw new Error('nginx not installed (apt-get install nginx-light): the HTTP/1.1 upstream of the REST rows');
  const dir = mkdtempSync(join(work, 'nginx-upstream-'));
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log stderr error;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir}; uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
  keepalive_requests 10000000; default_type application/json; etag off;
  server { listen 127.0.0.1:${port}; root ${docroot}; location / { } } }
`);
  const proc = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore', env: { ...process.env, PATH } });
  await waitForPort(port, 'nginx (upstream)');
  return { url: `http://127.0.0.1:${port}`, stop: () => void proc.kill('SIGQUIT') };
}
