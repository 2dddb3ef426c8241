// EchoService as @grpc/grpc-js sees it, with the plain-object message shapes proto-loader produces.
import { loadGrpcJsService } from './grpc-js-loader.ts';
import { ECHO_PROTO } from './proto-files.ts';

export type EchoRequestObject = {
  message: string;
  payload: Buffer;
  failCode: number;
  delayMs: number;
  responses: number;
  responseSize: number;
};

export type EchoResponseObject = { message: string; index: number; payload: Buffer };

export const EchoServiceClient = loadGrpcJsService(ECHO_PROTO, 'echo.v1.EchoService');
export const echoServiceDefinition = EchoServiceClient.service;
