// JSON lines on stderr. The level is decided once: disabled levels are no-ops,
// so a debug line on the hot path costs a function call and nothing more.
export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent';
type LogFn = (msg: string, fields?: Record<string, unknown>) => void;

export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };
const noop: LogFn = () => {};

export function createLogger(level: Level, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const at = (name: Exclude<Level, 'silent'>): LogFn =>
    ORDER[name] < ORDER[level]
      ? noop
      : (msg, fields) => write(JSON.stringify({ time: new Date().toISOString(), level: name, msg, ...fields }) + '\n');
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
