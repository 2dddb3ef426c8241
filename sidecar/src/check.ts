// `rpcscope --check`: what a start would run with, read and validated the same
// way, without binding a port — for a CI step or an init container, as `nginx -t`
// and Envoy's `--mode validate` are used.
import type { Config, EffectiveSetting } from './config/load.ts';
import type { StartFiles } from './config/start-files.ts';
import { envName } from './config/schema.ts';
import { VERSION } from './version.ts';

export function checkReport(config: Config, settings: readonly EffectiveSetting[], files: StartFiles): string {
  const width = Math.max(...settings.map((s) => s.flag.length)) + 2;
  const valueWidth = Math.max(...settings.map((s) => (s.text ?? '-').length)) + 2;
  const source = (s: EffectiveSetting): string => (s.from === 'env' ? `env ${envName(s.flag)}` : s.from);
  const lines = [`rpcscope ${VERSION}: settings ok (${config.mode}, upstream ${config.upstream.href})`];
  for (const s of settings) lines.push(`  ${s.flag.padEnd(width)}${(s.text ?? '-').padEnd(valueWidth)}(${source(s)})`);
  const protos = files.protos;
  lines.push(
    `  routes: ${(files.routes?.length ?? 0) + (protos?.routes.length ?? 0)} (${files.routes?.length ?? 0} from --routes, ${protos?.routes.length ?? 0} from google.api.http)`,
    `  operations: ${files.operations?.size ?? 0} from --operations`,
    `  proto methods: ${protos?.shapes.size ?? 0}`,
  );
  if (config.transcode && files.transcode) lines.push(`  transcoded routes: ${files.transcode.bindings.length} (google.api.http bindings, checked against their messages)`);
  return lines.join('\n') + '\n';
}
