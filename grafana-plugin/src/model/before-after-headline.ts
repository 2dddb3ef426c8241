import { Thresholds } from './delta';
import { BeforeAfterModel, BeforeAfterRow } from './before-after';
import { HeadlineChange } from './protocols-headline';
import { significance } from './significance';

/** A row (operation, protocol before → after) with changes that pass the thresholds. */
export interface BeforeAfterChange {
  row: BeforeAfterRow;
  /** Largest first, at most `maxChanges`. */
  changes: HeadlineChange[];
  score: number;
}

export interface BeforeAfterHeadline {
  /** Rows with enough calls and a significant change, largest change first. */
  changed: BeforeAfterChange[];
  /** Rows with enough calls and no significant change. */
  unchanged: BeforeAfterRow[];
  /** Rows where either side had fewer than minCalls calls: folded away, never in the headline. */
  fewCalls: BeforeAfterRow[];
}

/**
 * The changes worth reading first: each row with enough calls on both sides, its changes that
 * pass the thresholds ranked by how many thresholds they span, rows by their largest change.
 */
export function beforeAfterHeadline(model: BeforeAfterModel, t: Thresholds, maxChanges = 3): BeforeAfterHeadline {
  const changed: BeforeAfterChange[] = [];
  const unchanged: BeforeAfterRow[] = [];
  const fewCalls: BeforeAfterRow[] = [];
  for (const row of model.rows) {
    if (row.lowCalls) {
      fewCalls.push(row);
      continue;
    }
    const changes: HeadlineChange[] = [];
    for (const m of row.metrics) {
      const score = m.delta ? significance(m.delta, t) : 0;
      if (m.delta && score > 0) {
        changes.push({ metric: m.metric, delta: m.delta, score });
      }
    }
    if (changes.length === 0) {
      unchanged.push(row);
      continue;
    }
    changes.sort((a, b) => b.score - a.score);
    changed.push({ row, changes: changes.slice(0, maxChanges), score: changes[0]!.score });
  }
  changed.sort((a, b) => b.score - a.score || a.row.operation.localeCompare(b.row.operation));
  return { changed, unchanged, fewCalls };
}
