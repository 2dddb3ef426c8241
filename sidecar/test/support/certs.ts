// A throwaway CA-less self-signed certificate for 127.0.0.1/localhost, made with
// the openssl command line for each test run.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCert {
  certFile: string;
  keyFile: string;
  cert: Buffer;
}

export function makeSelfSignedCert(): TestCert {
  const dir = mkdtempSync(join(tmpdir(), 'rpcscope-tls-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ], { stdio: 'ignore' });
  return { certFile, keyFile, cert: readFileSync(certFile) };
}
