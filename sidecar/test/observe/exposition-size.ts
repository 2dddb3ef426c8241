// Series and bytes of an exposition, per family: what a scrape costs a
// Prometheus (one series per sample line) and the network (bytes, HELP and
// TYPE included).

export interface FamilySize {
  name: string;
  series: number;
  bytes: number;
}

export function exposedFamilies(text: string): FamilySize[] {
  const byName = new Map<string, FamilySize>();
  let current: FamilySize | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (?:HELP|TYPE) (\S+)/.exec(line);
    if (meta) {
      const name = meta[1]!;
      current = byName.get(name);
      if (current === undefined) byName.set(name, (current = { name, series: 0, bytes: 0 }));
      current.bytes += line.length + 1;
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0];
    const family = current && (sample === current.name || familyOf(sample) === current.name) ? current : undefined;
    const f = family ?? byName.get(sample) ?? byName.set(sample, { name: sample, series: 0, bytes: 0 }).get(sample)!;
    f.series++;
    f.bytes += Buffer.byteLength(line) + 1;
  }
  return [...byName.values()];
}

function familyOf(sample: string): string {
  return sample.replace(/_(bucket|count|sum)$/, '');
}
