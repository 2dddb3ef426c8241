// The subcommands' flags (diagnose, top, tap): node:util's parseArgs with the
// flags each command declares, and one error type for a usage mistake, which
// every command reports in one line with exit status 3 (0, 1 and 2 are
// diagnose's verdicts, so a cron job cannot take a typo for a finding).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseDuration } from '../config/parse-value.ts';
import { ErrorCode, RpcscopeError } from '../core/errors.ts';

export class UsageError extends RpcscopeError {
  constructor(message: string) {
    super(ErrorCode.USAGE, message);
    this.name = 'UsageError';
  }
}

export const USAGE_EXIT = 3;

export type FlagSpec = NonNullable<ParseArgsConfig['options']>;

/** The flags of `argv`, or a UsageError naming the first one that is wrong. */
export function readFlags<T extends FlagSpec>(command: string, argv: readonly string[], options: T): ReturnType<typeof parseArgs<{ options: T; args: string[]; strict: true; allowPositionals: false }>>['values'] {
  try {
    return parseArgs({ options, args: [...argv], strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError(`${command}: ${(err as Error).message} (see rpcscope ${command} --help)`);
  }
}

/** Milliseconds of a duration flag (`30m`, `500ms`), or a UsageError. */
export function durationFlag(command: string, flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw new UsageError(`${command}: --${flag}: ${JSON.stringify(text)} is not a duration such as 30s, 5m or 1h30m`);
  return ms;
}

/** A whole or decimal number flag at least `min`, or a UsageError. */
export function numberFlag(command: string, flag: string, text: string, min = 0): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < min) throw new UsageError(`${command}: --${flag}: ${JSON.stringify(text)} is not a number of at least ${min}`);
  return n;
}
