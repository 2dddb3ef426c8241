import { appendFileSync } from 'node:fs';

/**
 * One figure a reliability test measured (a peak RSS, a count of calls lost, an event-loop p99).
 * Every figure is printed on the test's output; when `RPCSCOPE_RELIABILITY_FIGURES` names a file
 * (test/reliability/report.ts sets it), it is also appended there as one JSON line, so one command
 * gathers the figures of every suite into test/reliability/REPORT.md.
 */
export interface ReliabilityFigure {
  /** The report's section: `load`, `faults`, `network-faults` (test/cluster), `bad-input` or `interop`. */
  section: 'load' | 'faults' | 'network-faults' | 'bad-input' | 'interop';
  /** What was tried, as a reader of the report would say it: `5,000 gRPC streams over 50 connections`. */
  scenario: string;
  /** The quantity: `peak RSS`, `calls lost`, `event-loop delay p99`. */
  name: string;
  value: number | string;
  /** `MB`, `ms`, `calls`, `%`; empty for a plain count or a word. */
  unit?: string;
}

export function reportFigure(figure: ReliabilityFigure): void {
  const unit = figure.unit ? ` ${figure.unit}` : '';
  console.log(`figure [${figure.section}] ${figure.scenario}: ${figure.name} = ${figure.value}${unit}`);
  const file = process.env.RPCSCOPE_RELIABILITY_FIGURES;
  if (file) appendFileSync(file, JSON.stringify({ ...figure, file: process.argv[1] ?? '' }) + '\n');
}
