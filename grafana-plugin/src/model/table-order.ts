import { SortBy } from '../types';

/**
 * Orders table rows: by the headline's rank (rows in the headline first, in its order, then the
 * rest as they came, busiest first), by calls, or by name. `rank` gives a row's place in the
 * headline, or undefined when it is not there.
 */
export function orderRows<T>(rows: readonly T[], sortBy: SortBy, name: (r: T) => string, rank: (r: T) => number | undefined): T[] {
  const indexed = rows.map((row, i) => ({ row, i }));
  indexed.sort((a, b) => {
    if (sortBy === 'name') {
      return name(a.row).localeCompare(name(b.row)) || a.i - b.i;
    }
    if (sortBy === 'change') {
      const ra = rank(a.row) ?? Infinity;
      const rb = rank(b.row) ?? Infinity;
      if (ra !== rb) {
        return ra - rb;
      }
    }
    return a.i - b.i;
  });
  return indexed.map((x) => x.row);
}
