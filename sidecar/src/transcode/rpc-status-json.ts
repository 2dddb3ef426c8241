// A failed call as a REST caller of a transcoded route reads it: the
// google.rpc.Status message in JSON (googleapis google/rpc/status.proto:
// `{"code": 5, "message": "…", "details": []}`), with the HTTP status the code
// maps to.
import { grpcCodeToHttpStatus } from './grpc-http-status.ts';

export interface StatusReply {
  status: number;
  body: Buffer;
}

export function rpcStatusJson(code: number, message: string): StatusReply {
  return { status: grpcCodeToHttpStatus(code), body: Buffer.from(JSON.stringify({ code, message, details: [] })) };
}
