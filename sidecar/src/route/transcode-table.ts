// Every google.api.http binding of the .proto files, compiled for transcoding:
// the messages resolved (the well-known types from protobufjs' bundled copies
// when the directory lacks them), each binding checked against its messages,
// and two bindings that claim one route refused — all at start.
//
// Unlike route/proto-catalog.ts, which reads services and options only, this
// needs every message, so the files are parsed into one root.
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { isRecord, readText } from './config-document.ts';
import { httpRule, listProtoFiles, services } from './proto-catalog.ts';
import { BindingError, compileBinding, matchBinding, type BoundVariable, type HttpBinding } from './http-binding.ts';
import { JsonMapping, type JsonNames } from './json-mapping.ts';

/** HttpRule's pattern fields (http.proto) that name an HTTP method. */
const RULE_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export interface Matched {
  readonly binding: HttpBinding;
  readonly values: Map<BoundVariable, string>;
}

export class TranscodeTable {
  private readonly byMethod = new Map<string, HttpBinding[]>();

  constructor(
    readonly bindings: readonly HttpBinding[],
    readonly json: JsonMapping,
  ) {
    for (const b of bindings) {
      const list = this.byMethod.get(b.httpMethod) ?? [];
      list.push(b);
      this.byMethod.set(b.httpMethod, list);
    }
    // A literal beats a variable: `/v1/orders:batch` before `/v1/orders/{id}`-like catch-alls.
    for (const list of this.byMethod.values()) list.sort((a, b) => b.literals - a.literals);
  }

  /** The binding a REST request (method, path without query) is for, if any. */
  match(httpMethod: string, path: string): Matched | undefined {
    const list = this.byMethod.get(httpMethod);
    if (!list) return undefined;
    const segments = path.slice(1).split('/');
    for (const binding of list) {
      let values;
      try {
        values = matchBinding(binding, segments);
      } catch {
        // A malformed percent-escape: not this route's to answer.
        return undefined;
      }
      if (values) return { binding, values };
    }
    return undefined;
  }
}

function ruleList(v: unknown): Record<string, unknown>[] {
  if (Array.isArray(v)) return v.filter(isRecord);
  return isRecord(v) ? [v] : [];
}

/** The .proto files of `dir` parsed into one root; well-known imports it lacks come from protobufjs' bundled ones. */
function loadRoot(dir: string): { root: protobuf.Root; fileOf: Map<protobuf.Service, string> } {
  const files = listProtoFiles(dir);
  const root = new protobuf.Root();
  const fileOf = new Map<protobuf.Service, string>();
  const imports = new Set<string>();
  const known = new Set<protobuf.Service>();
  for (const rel of files) {
    const file = join(dir, rel);
    try {
      const parsed = protobuf.parse(readText(file), root, { keepCase: true, alternateCommentMode: true });
      for (const i of parsed.imports ?? []) imports.add(i);
    } catch (e) {
      throw new Error(`${file}: ${(e as Error).message}`, { cause: e });
    }
    for (const s of services(root)) {
      if (known.has(s)) continue;
      known.add(s);
      fileOf.set(s, file);
    }
  }
  const present = new Set(files.map((f) => f.split('\\').join('/')));
  for (const i of imports) {
    if (present.has(i)) continue;
    const bundled = protobuf.common.get(i) as { nested?: protobuf.INamespace['nested'] } | null;
    if (bundled?.nested) root.addJSON(bundled.nested);
  }
  return { root, fileOf };
}

/**
 * Reads `dir` and compiles every binding; throws an Error whose message is one
 * line naming the file, the rule and the field when a rule cannot work.
 */
export function loadTranscodeTable(dir: string, names: JsonNames): TranscodeTable {
  const { root, fileOf } = loadRoot(dir);
  const bindings: HttpBinding[] = [];
  const claimed = new Map<string, HttpBinding>();
  for (const [service, file] of fileOf) {
    for (const m of service.methodsArray) {
      const rule = httpRule(m);
      if (!rule) continue;
      const rpc = `${service.fullName.slice(1)}/${m.name}`;
      let requestType: protobuf.Type;
      let responseType: protobuf.Type;
      try {
        requestType = service.lookupType(m.requestType);
        responseType = service.lookupType(m.responseType);
        requestType.resolveAll();
        responseType.resolveAll();
      } catch (e) {
        throw new Error(`${file}: ${rpc}: ${(e as Error).message}`, { cause: e });
      }
      if (m.requestStream) continue;
      for (const r of [rule, ...ruleList(rule.additional_bindings)]) {
        const method = RULE_METHODS.find((k) => typeof r[k] === 'string');
        const custom = isRecord(r.custom) ? r.custom : undefined;
        const httpMethod = method?.toUpperCase() ?? (typeof custom?.kind === 'string' ? custom.kind.toUpperCase() : undefined);
        const path = method ? (r[method] as string) : typeof custom?.path === 'string' ? custom.path : undefined;
        if (httpMethod === undefined || path === undefined) continue;
        const binding = compileBinding({
          file,
          rpc,
          httpMethod,
          path,
          body: typeof r.body === 'string' ? r.body : '',
          responseBody: typeof r.response_body === 'string' ? r.response_body : '',
          requestType,
          responseType,
          serverStreaming: m.responseStream === true,
        });
        const other = claimed.get(binding.routeKey);
        if (other) throw new BindingError(`${file}: ${rpc} (google.api.http ${httpMethod.toLowerCase()} "${path}"): the route ${binding.routeKey} is already claimed by ${other.rpc} ("${other.pathText}" in ${other.file})`);
        claimed.set(binding.routeKey, binding);
        bindings.push(binding);
      }
    }
  }
  return new TranscodeTable(bindings, new JsonMapping(root, names));
}
