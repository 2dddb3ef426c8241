// Which route a call is: its `method` and `operation` labels and, for RPCs, its
// streaming shape. Resolved once per call at its start; each distinct route is
// one interned object, so that observers can bind their metric cells to it.
import type { TrpcCall } from '../protocol/trpc-call.ts';
import type { Protocol } from '../protocol/vocabulary.ts';
import { learnTemplate } from './learned-template.ts';
import { MethodGuard, OTHER } from './method-guard.ts';
import { OperationMap } from './operation-map.ts';
import type { MethodShape, ProtoCatalog } from './proto-catalog.ts';
import { rpcMethodFromPath } from './rpc-method.ts';
import { HTTP_METHODS, RouteTable } from './route-template.ts';
import type { RestRoute } from './route-template.ts';

/** A tRPC procedure path: identifiers joined by dots (routers nest), as tRPC names them. */
const TRPC_PROCEDURE = /^[A-Za-z_$][\w$-]{0,99}(?:\.[A-Za-z_$][\w$-]{0,99}){0,15}$/;

export interface Route {
  readonly protocol: Protocol;
  readonly method: string;
  readonly operation: string;
  /** The method's shape in its descriptor; undefined without .proto files, or for REST. */
  readonly shape: MethodShape | undefined;
}

export interface RouterOptions {
  /** Distinct `method` labels per protocol (--max-methods). */
  maxMethods: number;
  /** REST routes from the routes file or OpenAPI document. */
  routes?: readonly RestRoute[];
  /** The operations file. */
  operations?: OperationMap;
  /** What the .proto files say. */
  protos?: ProtoCatalog;
}

interface ProtocolRoutes {
  readonly guard: MethodGuard;
  /** RPC: request path -> route; REST: `method` label -> route. Only admitted routes, so bounded by the guard. */
  readonly known: Map<string, Route>;
  readonly other: Route;
}

export class Router {
  private readonly table = new RouteTable();
  private readonly operations: OperationMap;
  private readonly shapes: ReadonlyMap<string, MethodShape>;
  private readonly byProtocol: Record<Protocol, ProtocolRoutes>;

  constructor(opts: RouterOptions) {
    if (!Number.isInteger(opts.maxMethods) || opts.maxMethods < 0) throw new Error(`maxMethods must be a non-negative integer, got ${opts.maxMethods}`);
    for (const r of opts.routes ?? []) this.table.add(r);
    for (const r of opts.protos?.routes ?? []) this.table.add(r);
    this.operations = OperationMap.merge(opts.protos?.operations ?? new OperationMap(), opts.operations ?? new OperationMap());
    this.shapes = opts.protos?.shapes ?? new Map();
    const space = (protocol: Protocol): ProtocolRoutes => ({
      guard: new MethodGuard(opts.maxMethods),
      known: new Map(),
      other: { protocol, method: OTHER, operation: OTHER, shape: undefined },
    });
    this.byProtocol = { grpc: space('grpc'), grpc_web: space('grpc_web'), connect: space('connect'), rest: space('rest'), trpc: space('trpc') };
  }

  /**
   * The route of a whole call, resolved once as it starts and carried on its
   * record: metrics, span names and the access log all read that one. A tRPC
   * call is routed by its (first) procedure: the access log's one line per HTTP call.
   */
  resolveCall(call: { readonly protocol: Protocol; readonly httpMethod: string; readonly path: string; readonly trpc: TrpcCall | undefined }): Route {
    if (call.trpc) return this.resolveProcedure(call.trpc.procedures[0]!.path);
    return this.resolve(call.protocol, call.httpMethod, call.path);
  }

  /** tRPC calls are routed by procedure (resolveProcedure): their path may name several. */
  resolve(protocol: Protocol, httpMethod: string, path: string): Route {
    if (protocol === 'trpc') return this.byProtocol.trpc.other;
    return protocol === 'rest' ? this.resolveRest(httpMethod, path) : this.resolveRpc(protocol, path);
  }

  /** One tRPC procedure (`user.getUser`): its `method` label is its path. */
  resolveProcedure(procedure: string): Route {
    const space = this.byProtocol.trpc;
    const known = space.known.get(procedure);
    if (known !== undefined) return known;
    if (!TRPC_PROCEDURE.test(procedure) || space.guard.admit(procedure) === OTHER) return space.other;
    const route: Route = { protocol: 'trpc', method: procedure, operation: this.operations.lookup(procedure) ?? procedure, shape: undefined };
    space.known.set(procedure, route);
    return route;
  }

  private resolveRpc(protocol: Protocol, path: string): Route {
    const space = this.byProtocol[protocol];
    const known = space.known.get(path);
    if (known !== undefined) return known;
    const method = rpcMethodFromPath(path);
    if (method === undefined || space.guard.admit(method) === OTHER) return space.other;
    const route: Route = { protocol, method, operation: this.operations.lookup(method) ?? method, shape: this.shapes.get(method) };
    space.known.set(path, route);
    return route;
  }

  private resolveRest(httpMethod: string, path: string): Route {
    const space = this.byProtocol.rest;
    if (!HTTP_METHODS.has(httpMethod)) return space.other;
    let method = this.table.match(httpMethod, path);
    if (method === undefined) {
      const learned = learnTemplate(path);
      if (learned === undefined) return space.other;
      method = `${httpMethod} ${learned}`;
    }
    const known = space.known.get(method);
    if (known !== undefined) return known;
    if (space.guard.admit(method) === OTHER) return space.other;
    const route: Route = { protocol: 'rest', method, operation: this.operations.lookup(method) ?? method, shape: undefined };
    space.known.set(method, route);
    return route;
  }
}
