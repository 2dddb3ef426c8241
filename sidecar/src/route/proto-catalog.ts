// What .proto files tell routing: each RPC method's streaming shape (so that a
// streaming method answered with one message is still a stream), and its
// google.api.http bindings, which are REST routes for the same operation.
// A bound REST route takes the RPC method's name as its operation
// (`GET /v1/orders/{id}` -> `order.v1.OrderService/GetOrder`), so that the RPC
// method's own series need no mapping at all.
//
// Files are parsed one by one without resolving imports: services, methods and
// options are all that is read, and google/api/annotations.proto need not be present.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { isRecord, readText } from './config-document.ts';
import { httpRuleTemplate } from './http-rule.ts';
import { OperationMap } from './operation-map.ts';
import { restMethodLabel } from './route-template.ts';
import type { RestRoute } from './route-template.ts';

export type MethodShape = 'unary' | 'client_streaming' | 'server_streaming' | 'bidi_streaming';

export interface ProtoCatalog {
  /** google.api.http bindings, as REST routes. */
  readonly routes: readonly RestRoute[];
  /** Each bound REST route -> the RPC method it is bound to. */
  readonly operations: OperationMap;
  /** `pkg.Service/Method` -> its shape in the descriptor. */
  readonly shapes: ReadonlyMap<string, MethodShape>;
}

/** HttpRule's pattern fields (http.proto) that name an HTTP method. */
const RULE_METHODS = ['get', 'put', 'post', 'delete', 'patch'];

function shapeOf(m: protobuf.Method): MethodShape {
  if (m.requestStream) return m.responseStream ? 'bidi_streaming' : 'client_streaming';
  return m.responseStream ? 'server_streaming' : 'unary';
}

/** The bindings of one HttpRule: itself and its additional_bindings (one object or a list, as protobufjs gives them). */
function ruleBindings(rule: Record<string, unknown>, where: string): RestRoute[] {
  const routes: RestRoute[] = [];
  const custom = rule.custom;
  const method = RULE_METHODS.find((k) => typeof rule[k] === 'string');
  try {
    if (method !== undefined) {
      routes.push({ httpMethod: method.toUpperCase(), template: httpRuleTemplate(rule[method] as string) });
    } else if (isRecord(custom) && typeof custom.kind === 'string' && typeof custom.path === 'string') {
      routes.push({ httpMethod: custom.kind.toUpperCase(), template: httpRuleTemplate(custom.path) });
    }
  } catch (e) {
    throw new Error(`${where}: ${(e as Error).message}`, { cause: e });
  }
  const more = rule.additional_bindings;
  for (const b of Array.isArray(more) ? more : more === undefined ? [] : [more]) {
    if (isRecord(b)) routes.push(...ruleBindings(b, where));
  }
  return routes;
}

/**
 * A method's google.api.http option, whether written as one aggregate or field
 * by field (`option (google.api.http).get = "..."; option (google.api.http).body = "*";`).
 * The route catalogue and the transcode table both read it here, so they agree.
 */
export function httpRule(m: protobuf.Method): Record<string, unknown> | undefined {
  let rule: Record<string, unknown> | undefined;
  for (const opt of m.parsedOptions ?? []) {
    const v: unknown = (opt as Record<string, unknown>)['(google.api.http)'];
    if (isRecord(v)) rule = { ...rule, ...v };
  }
  return rule;
}

/** Every service of a parsed root, nested packages included. */
export function* services(ns: protobuf.NamespaceBase): Generator<protobuf.Service> {
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Service) yield nested;
    if (nested instanceof protobuf.Namespace) yield* services(nested);
  }
}

/** The .proto files under `dir` (recursively, relative paths, sorted); throws when there is none. */
export function listProtoFiles(dir: string): string[] {
  let files: string[];
  try {
    files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.proto')).sort();
  } catch (e) {
    throw new Error(`${dir}: cannot list .proto files: ${(e as Error).message}`, { cause: e });
  }
  if (files.length === 0) throw new Error(`${dir}: no .proto files found`);
  return files;
}

/** Reads every .proto file under `dir` (recursively); throws an Error naming the file on a parse error or a bad rule. */
export function loadProtoDir(dir: string): ProtoCatalog {
  const files = listProtoFiles(dir);
  const routes: RestRoute[] = [];
  const operations = new OperationMap();
  const shapes = new Map<string, MethodShape>();
  for (const rel of files) {
    const file = join(dir, rel);
    let root: protobuf.Root;
    try {
      root = protobuf.parse(readText(file), { keepCase: true, alternateCommentMode: true }).root;
    } catch (e) {
      throw new Error(`${file}: ${(e as Error).message}`, { cause: e });
    }
    for (const service of services(root)) {
      for (const m of service.methodsArray) {
        const rpc = `${service.fullName.slice(1)}/${m.name}`;
        shapes.set(rpc, shapeOf(m));
        const rule = httpRule(m);
        if (rule === undefined) continue;
        for (const route of ruleBindings(rule, `${file}: ${rpc} (google.api.http)`)) {
          const label = restMethodLabel(route);
          const other = operations.add(label, rpc);
          if (other !== undefined) throw new Error(`${file}: "${label}" is bound to both ${other} and ${rpc}`);
          routes.push(route);
        }
      }
    }
  }
  return { routes, operations, shapes };
}
