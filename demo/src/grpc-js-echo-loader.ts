// EchoService as @grpc/grpc-js sees it: loaded from the .proto at run time with
// @grpc/proto-loader rather than from protobuf-es code, so that the grpc-js
// server and clients share nothing with the connect-node side.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ECHO_PROTO, PROTO_DIR } from './proto-files.ts';

export type EchoRequestObject = {
  message: string;
  payload: Buffer;
  failCode: number;
  delayMs: number;
  responses: number;
  responseSize: number;
};

export type EchoResponseObject = { message: string; index: number; payload: Buffer };

const definition = protoLoader.loadSync(ECHO_PROTO, {
  includeDirs: [PROTO_DIR],
  // camelCase field names and filled-in defaults, so both implementations read the same EchoInput shape.
  keepCase: false,
  defaults: true,
  longs: Number,
  enums: String,
});

const echoPackage = grpc.loadPackageDefinition(definition) as unknown as {
  echo: { v1: { EchoService: grpc.ServiceClientConstructor } };
};

export const EchoServiceClient = echoPackage.echo.v1.EchoService;
export const echoServiceDefinition = EchoServiceClient.service;
