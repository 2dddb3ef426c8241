import { parseArgs } from 'node:util';
import type { TrafficOptions, TrafficProtocol } from './traffic.ts';

export const TRAFFIC_USAGE =
  'usage: traffic-cli --target http://host:port [--duration-ms 10000] [--rps 20] ' +
  '[--mix grpc-js=2,grpc=2,connect=2,grpc-web=1,rest=3] [--seed N]';

/** The CLI's flags as runTraffic options; throws with the flag and the bad value. Range checks are runTraffic's. */
export function parseTrafficArgs(argv: string[]): TrafficOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      target: { type: 'string' },
      'duration-ms': { type: 'string' },
      rps: { type: 'string' },
      mix: { type: 'string' },
      seed: { type: 'string' },
    },
  });
  if (!values.target) throw new Error(`--target is required\n${TRAFFIC_USAGE}`);
  return {
    target: values.target,
    durationMs: numberFlag('duration-ms', values['duration-ms']),
    rps: numberFlag('rps', values.rps),
    mix: values.mix === undefined ? undefined : parseMix(values.mix),
    seed: numberFlag('seed', values.seed),
  };
}

function parseMix(text: string): Partial<Record<TrafficProtocol, number>> {
  const mix: Record<string, number> = {};
  for (const part of text.split(',')) {
    const [name, weight, extra] = part.split('=');
    if (!name || weight === undefined || extra !== undefined) throw new Error(`--mix: "${part}" is not protocol=weight`);
    mix[name.trim()] = numberFlag(`mix ${name.trim()}`, weight)!;
  }
  return mix;
}

function numberFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new Error(`--${name}: "${value}" is not a number`);
  return n;
}
