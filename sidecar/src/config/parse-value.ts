// Turning a setting's text into its value, with the one-line message a user sees
// when it is wrong: the flag, the value, and what is allowed.
import { statSync } from 'node:fs';
import type { Kind } from './schema.ts';
import { ErrorCode, RpcscopeError } from '../core/errors.ts';

export class ConfigError extends RpcscopeError {
  constructor(message: string) {
    super(ErrorCode.CONFIG, message);
    this.name = 'ConfigError';
  }
}

export interface HostPort {
  host: string;
  port: number;
}

export interface UpstreamUrl {
  tls: boolean;
  host: string;
  port: number;
  /** `host:port` as it goes in :authority / Host. */
  authority: string;
  /** Normalised `http://host:port` or `https://host:port`. */
  href: string;
}

export type Value = string | number | boolean | HostPort | UpstreamUrl;

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds from `500ms`, `20s`, `1m30s`, `2h`, or `0`. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let end = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    total += Number(m[1]) * DURATION_UNITS[m[2]!]!;
    end = re.lastIndex;
  }
  return end === text.length && end > 0 ? Math.round(total) : undefined;
}

function parseHostPort(text: string): HostPort | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]*)):(\d{1,5})$/.exec(text);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

function parseUrl(text: string): UpstreamUrl | undefined {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return undefined;
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '' || (u.pathname !== '/' && u.pathname !== '') || u.search || u.hash || u.username) return undefined;
  const tls = u.protocol === 'https:';
  const port = u.port === '' ? (tls ? 443 : 80) : Number(u.port);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  const authority = `${u.hostname}:${port}`;
  return { tls, host, port, authority, href: `${u.protocol}//${authority}` };
}

export function parseValue(flag: string, kind: Kind, text: string): Value {
  const bad = (allowed: string): never => {
    throw new ConfigError(`--${flag}: invalid value ${JSON.stringify(text)}: expected ${allowed}`);
  };
  switch (kind.type) {
    case 'hostport':
      return parseHostPort(text) ?? bad('HOST:PORT with a port from 0 to 65535, e.g. 0.0.0.0:14001 or [::1]:14001');
    case 'url':
      return parseUrl(text) ?? bad('http://host:port or https://host:port with no path, e.g. http://127.0.0.1:8080');
    case 'enum':
      return kind.values.includes(text) ? text : bad(`one of ${kind.values.join(', ')}`);
    case 'duration':
      return parseDuration(text) ?? bad('a duration such as 500ms, 20s, 1m or 1h30m');
    case 'int': {
      const n = /^-?\d+$/.test(text) ? Number(text) : NaN;
      return Number.isSafeInteger(n) && n >= kind.min && n <= kind.max ? n : bad(`a whole number from ${kind.min} to ${kind.max}`);
    }
    case 'ratio': {
      const n = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
      return n >= 0 && n <= 1 ? n : bad('a number from 0 to 1, e.g. 0.1 for one call in ten');
    }
    case 'bool':
      if (text === 'true' || text === '1' || text === '') return true;
      if (text === 'false' || text === '0') return false;
      return bad('true or false');
    case 'file':
    case 'dir': {
      let st;
      try {
        st = statSync(text);
      } catch {
        return bad(`an existing ${kind.type === 'file' ? 'file' : 'directory'} (${text} does not exist)`);
      }
      if (kind.type === 'file' ? !st.isFile() : !st.isDirectory()) bad(`a ${kind.type === 'file' ? 'file' : 'directory'}`);
      return text;
    }
    case 'string':
      return text;
  }
}
