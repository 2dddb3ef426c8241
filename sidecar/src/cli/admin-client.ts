// Reading a sidecar's admin port from the command line: its address, and the
// bearer token /debug/* asks callers from outside the pod for, read as the
// sidecar reads it (--admin-token-file, or RPCSCOPE_ADMIN_TOKEN_FILE).
import { readFileSync } from 'node:fs';
import { UsageError } from './cli-args.ts';

/** The Authorization header of `tokenFile` (or of RPCSCOPE_ADMIN_TOKEN_FILE), none without either. */
export function adminHeaders(command: string, tokenFile: string | undefined, env: NodeJS.ProcessEnv): Record<string, string> {
  const file = tokenFile ?? (env.RPCSCOPE_ADMIN_TOKEN_FILE || undefined);
  if (file === undefined) return {};
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new UsageError(`${command}: --admin-token-file: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return { authorization: `Bearer ${token}` };
}

/** `http://host:port` of `HOST:PORT` (or of a URL given whole). */
export function adminBase(address: string): string {
  const base = /^https?:\/\//u.test(address) ? address : `http://${address}`;
  return base.replace(/\/+$/u, '');
}

/** What a refused admin request means, in the words a user acts on. */
export function refusedReason(status: number): string | undefined {
  if (status === 401) return 'the admin port asks for a token: pass --admin-token-file (the file the sidecar reads), or connect from the pod (kubectl port-forward)';
  if (status === 403) return 'the admin port refused the token of --admin-token-file';
  if (status === 404) return 'the sidecar serves no /debug/* (--debug-endpoints false), or is older than this command';
  return undefined;
}
