// gRPC, gRPC-Web and Connect all put the method in the path as
// `/package.Service/Method` (PROTOCOL-HTTP2.md "Path"; the Connect protocol's
// "Routing"). Only that shape becomes a label: anything else sent to a gRPC-family
// endpoint is a scan or a mistake, and would be an unbounded label.

/** Protobuf identifiers (full service name, then method); length bounded so that a label stays a label. */
const RPC_PATH = /^\/[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\/[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_RPC_PATH = 256;

/** `pkg.Service/Method` from a request path, or undefined when the path is not a well-formed RPC path. */
export function rpcMethodFromPath(path: string): string | undefined {
  if (path.length > MAX_RPC_PATH || !RPC_PATH.test(path)) return undefined;
  return path.slice(1);
}

/** Whether a configured name is a well-formed `pkg.Service/Method`. */
export function isRpcMethod(name: string): boolean {
  return rpcMethodFromPath(`/${name}`) !== undefined;
}
