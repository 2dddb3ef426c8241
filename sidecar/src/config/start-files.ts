// The files the settings name, read once at start: routes, operations, .proto
// files and the TLS material. Apart from the pipeline so that `--check` reads
// exactly what a start would, without listening. A file that cannot be used is a
// ConfigError naming its flag.
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadOperationsFile, type OperationMap } from '../route/operation-map.ts';
import { loadProtoDir, type ProtoCatalog } from '../route/proto-catalog.ts';
import { loadRouteFile } from '../route/route-file.ts';
import { loadTranscodeTable, type TranscodeTable } from '../route/transcode-table.ts';
import type { RestRoute } from '../route/route-template.ts';
import type { Config } from './load.ts';
import { ConfigError } from './parse-value.ts';
import { nodeTls } from '../builtins.ts';

export interface StartFiles {
  routes: readonly RestRoute[] | undefined;
  operations: OperationMap | undefined;
  protos: ProtoCatalog | undefined;
  /** With --transcode or --split: the google.api.http bindings, checked against their messages, that the translating stage serves by. */
  transcode: TranscodeTable | undefined;
}

function load<T>(flag: string, file: string | undefined, loader: (file: string) => T): T | undefined {
  if (file === undefined) return undefined;
  try {
    return loader(file);
  } catch (err) {
    throw new ConfigError(`--${flag}: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** A certificate and key that do not parse, or do not belong together, would otherwise fail only at the first handshake. */
function checkTls(config: Config): void {
  if (config.tlsCert !== undefined && config.tlsKey !== undefined) {
    const { tlsCert, tlsKey } = config;
    load('tls-cert', tlsCert, () => nodeTls().createSecureContext({ cert: readFileSync(tlsCert), key: readFileSync(tlsKey) }));
  }
  load('upstream-ca', config.upstreamCa, (file) => nodeTls().createSecureContext({ ca: readFileSync(file) }));
}

/** The access log file is appended to, or created: the first call would otherwise find out. */
function checkAccessLog(path: string): void {
  if (path === 'off' || path === 'stdout' || path === 'stderr') return;
  load('access-log', path, (file) => accessSync(existsSync(file) ? file : dirname(file), constants.W_OK));
}

export function loadStartFiles(config: Config): StartFiles {
  checkTls(config);
  checkAccessLog(config.accessLog);
  return {
    routes: load('routes', config.routesFile, loadRouteFile),
    operations: load('operations', config.operationsFile, loadOperationsFile),
    protos: load('proto', config.protoDir, loadProtoDir),
    transcode: config.transcode || config.split.size > 0 ? load('proto', config.protoDir, (dir) => loadTranscodeTable(dir, config.jsonNames)) : undefined,
  };
}
