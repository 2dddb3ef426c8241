import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PROTO_DIR } from './proto-files.ts';

/**
 * A grpc-js client constructor for `service` (its full name), loaded from the
 * demo's .proto at run time with @grpc/proto-loader rather than from
 * protobuf-es code, so that grpc-js servers and clients share nothing with the
 * connect-node side.
 */
export function loadGrpcJsService(protoFile: string, service: string): grpc.ServiceClientConstructor {
  const definition = protoLoader.loadSync(protoFile, {
    includeDirs: [PROTO_DIR],
    // camelCase field names and filled-in defaults, as protobuf-es gives them.
    keepCase: false,
    defaults: true,
    longs: String,
    enums: String,
  });
  let node: unknown = grpc.loadPackageDefinition(definition);
  for (const part of service.split('.')) node = (node as Record<string, unknown>)[part];
  if (typeof node !== 'function') throw new Error(`${service} is not a service in ${protoFile}`);
  return node as grpc.ServiceClientConstructor;
}
