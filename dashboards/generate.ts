// Writes the committed dashboard JSON from the code under src/.
//   node --import tsx dashboards/generate.ts
// A test fails when the committed files and this output differ.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { http2LoadBalance } from './src/http2-load-balance.ts';
import type { Dashboard } from './src/model.ts';
import { protocolMigration } from './src/protocol-migration.ts';
import { rpcOverview } from './src/rpc-overview.ts';

export const DASHBOARDS_DIR = dirname(fileURLToPath(import.meta.url));

/** File name (in dashboards/) -> dashboard. */
export function buildDashboards(): Record<string, Dashboard> {
  return {
    'rpc-overview.json': rpcOverview(),
    'http2-load-balance.json': http2LoadBalance(),
    'protocol-migration.json': protocolMigration(),
  };
}

export function render(d: Dashboard): string {
  return `${JSON.stringify(d, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [file, d] of Object.entries(buildDashboards())) {
    writeFileSync(join(DASHBOARDS_DIR, file), render(d));
    console.log(`wrote dashboards/${file}`);
  }
}
