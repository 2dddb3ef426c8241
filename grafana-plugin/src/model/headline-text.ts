import { BeforeAfterRow } from './before-after';
import { BeforeAfterChange } from './before-after-headline';
import { formatDelta, Units } from './format';
import { metricDef } from './metric-catalog';
import { protocolLabel } from './protocol-names';
import { HeadlineChange, ProtocolVerdict } from './protocols-headline';

/** "p99 −61 %", "errors +2.00 pp": a change as the matrix cell shows it, named. */
export function changeText(change: HeadlineChange, units: Units): string {
  const def = metricDef(change.metric);
  return `${def.label} ${formatDelta(change.delta, def.kind, units)}`;
}

/** "GetOrder: gRPC p99 −61 %, errors +4.00 pp vs REST". */
export function protocolVerdictText(v: ProtocolVerdict, units: Units): string {
  const changes = v.changes.map((c) => changeText(c, units)).join(', ');
  return `${v.operation}: ${protocolLabel(v.protocol)} ${changes} vs ${protocolLabel(v.baseline)}`;
}

/** "REST → gRPC" for an operation that moved, "gRPC" where it stayed, "" for rows by operation alone. */
export function protocolPath(row: BeforeAfterRow): string {
  const b = row.protocolBefore;
  const a = row.protocolAfter;
  if (b === a) {
    return b ? protocolLabel(b) : '';
  }
  return `${b === null ? 'none' : protocolLabel(b) || 'all'} → ${a === null ? 'none' : protocolLabel(a) || 'all'}`;
}

/** "p99 −47 % for GetOrder (REST → gRPC), errors +8.60 pp". */
export function beforeAfterText(c: BeforeAfterChange, units: Units): string {
  const [first, ...rest] = c.changes.map((x) => changeText(x, units));
  const path = protocolPath(c.row);
  const where = `${c.row.operation}${path ? ` (${path})` : ''}`;
  return [`${first} for ${where}`, ...rest].join(', ');
}
