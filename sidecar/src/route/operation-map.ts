// The operation map: which REST routes and RPC methods are one logical
// operation, so that the `operation` label lines them up across protocols.
//
// The operations file (YAML or JSON):
//
//   operations:
//     GetOrder:                            # the `operation` label
//       - GET /v1/orders/{id}              # a REST route: HTTP method, space, template
//       - order.v1.OrderService/GetOrder   # an RPC method: gRPC, gRPC-Web and Connect alike
//       - trpc order.getOrder              # a tRPC procedure: `trpc`, space, its path
//     ListOrders: GET /v1/orders           # a single entry needs no list
//
// A REST entry matches the route whatever its parameters are called: `{id}` here
// matches `{orderId}` in an OpenAPI file and the `{id}` of a learned template.
// An entry may belong to one operation only.
import { isRecord, readDocument } from './config-document.ts';
import { isRpcMethod } from './rpc-method.ts';
import { parseRoute, restMethodLabel } from './route-template.ts';

/** The key a `method` label is looked up by: parameter names do not matter. */
function operationKey(method: string): string {
  return method.replace(/\{[^}=]*(=\*\*)?\}/g, '{$1}');
}

export class OperationMap {
  private readonly byKey = new Map<string, string>();

  get size(): number {
    return this.byKey.size;
  }

  /** Maps a `method` label to an operation; returns the other operation it was already mapped to, if any. */
  add(method: string, operation: string): string | undefined {
    const key = operationKey(method);
    const existing = this.byKey.get(key);
    if (existing !== undefined && existing !== operation) return existing;
    this.byKey.set(key, operation);
    return undefined;
  }

  lookup(method: string): string | undefined {
    return this.byKey.get(operationKey(method));
  }

  /** A map holding both; where both map a method, `overrides` wins (explicit configuration over .proto rules). */
  static merge(base: OperationMap, overrides: OperationMap): OperationMap {
    const merged = new OperationMap();
    for (const [k, v] of base.byKey) merged.byKey.set(k, v);
    for (const [k, v] of overrides.byKey) merged.byKey.set(k, v);
    return merged;
  }
}

/** The `method` label an operations-file entry stands for; throws when it is neither form. */
function entryMethod(entry: string): string {
  if (isRpcMethod(entry)) return entry;
  const trpc = /^trpc\s+(\S+)$/.exec(entry.trim());
  if (trpc) return trpc[1]!;
  if (/^\S+\s+\//.test(entry.trim())) return restMethodLabel(parseRoute(entry));
  throw new Error(`"${entry}" is neither a REST route ("GET /v1/orders/{id}") nor an RPC method ("order.v1.OrderService/GetOrder") nor a tRPC procedure ("trpc order.getOrder")`);
}

export function parseOperations(doc: unknown, file: string): OperationMap {
  if (!isRecord(doc) || !isRecord(doc.operations)) throw new Error(`${file}: expected an "operations:" mapping of operation name to routes and methods`);
  const map = new OperationMap();
  for (const [operation, value] of Object.entries(doc.operations)) {
    if (operation.trim() === '') throw new Error(`${file}: an operation name is empty`);
    const entries = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(entries) || entries.length === 0) throw new Error(`${file}: operations.${operation} must be a route or method, or a non-empty list of them`);
    entries.forEach((entry, i) => {
      if (typeof entry !== 'string') throw new Error(`${file}: operations.${operation}[${i}] is not a string`);
      let method: string;
      try {
        method = entryMethod(entry);
      } catch (e) {
        throw new Error(`${file}: operations.${operation}[${i}]: ${(e as Error).message}`, { cause: e });
      }
      const other = map.add(method, operation);
      if (other !== undefined) throw new Error(`${file}: "${entry}" is listed under both operations.${other} and operations.${operation}`);
    });
  }
  return map;
}

export function loadOperationsFile(file: string): OperationMap {
  return parseOperations(readDocument(file), file);
}
