// The demo's flags: few, each checked, a bad one named with what is allowed.

export interface DemoArgs {
  /** Seconds of story; Infinity runs until Ctrl-C (the story's clock then assumes 60 s). */
  durationS: number;
  /** Print only the final summary. */
  noUi: boolean;
  /** Also write the summary as JSON here. */
  summaryJson: string | undefined;
  /** Skip Prometheus and the panel page even when Prometheus is installed. */
  noPage: boolean;
}

export const DEFAULT_DURATION_S = 60;
/** The story needs time for a migration, a pinned phase, a rollout and a healed phase. */
const MIN_DURATION_S = 15;

export const DEMO_HELP = `usage: npm run demo -- [--duration S] [--no-ui] [--no-page] [--summary-json FILE]

  --duration S         seconds of story, at least ${MIN_DURATION_S} (default ${DEFAULT_DURATION_S}); Ctrl-C ends it early
  --no-ui              no live view: print the final summary only
  --no-page            do not start Prometheus and the panel page even when prometheus is on PATH
  --summary-json FILE  also write the summary's figures as JSON to FILE
`;

export function parseDemoArgs(argv: readonly string[]): DemoArgs | { error: string } | { help: string } {
  const out: DemoArgs = { durationS: DEFAULT_DURATION_S, noUi: false, summaryJson: undefined, noPage: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string | undefined => argv[++i];
    switch (arg) {
      case '--duration': {
        const v = value();
        const n = Number(v);
        if (v === undefined || !Number.isFinite(n) || n < MIN_DURATION_S) return { error: `--duration ${v ?? ''}: expected a number of seconds, at least ${MIN_DURATION_S}` };
        out.durationS = n;
        break;
      }
      case '--no-ui':
        out.noUi = true;
        break;
      case '--no-page':
        out.noPage = true;
        break;
      case '--summary-json': {
        const v = value();
        if (v === undefined || v === '') return { error: '--summary-json: expected a file name' };
        out.summaryJson = v;
        break;
      }
      case '--help':
      case '-h':
        return { help: DEMO_HELP };
      default:
        return { error: `unknown flag ${arg}\n${DEMO_HELP}` };
    }
  }
  return out;
}
