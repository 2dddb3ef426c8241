// EchoService on connect-node's router: serves Connect, gRPC and gRPC-Web alike.
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { EchoResponseSchema } from './gen/echo/v1/echo_pb.ts';
import type { EchoRequest, EchoResponse, EchoService } from './gen/echo/v1/echo_pb.ts';
import { REQUESTED_FAILURE, requestedFailure, responsePayload, serverStreamCount } from './echo-behaviour.ts';
import { sleep } from './sleep.ts';

function failIfRequested(req: EchoRequest): void {
  const code = requestedFailure(req);
  if (code !== undefined) throw new ConnectError(REQUESTED_FAILURE, code as Code);
}

function answer(req: EchoRequest, index: number): EchoResponse {
  return create(EchoResponseSchema, { message: req.message, index, payload: responsePayload(req) });
}

export const echoConnectService: ServiceImpl<typeof EchoService> = {
  async echo(req: EchoRequest, ctx: HandlerContext) {
    await sleep(req.delayMs, ctx.signal);
    failIfRequested(req);
    return answer(req, 0);
  },

  async *serverStream(req: EchoRequest, ctx: HandlerContext) {
    const count = serverStreamCount(req);
    for (let i = 0; i < count; i++) {
      await sleep(req.delayMs, ctx.signal);
      yield answer(req, i);
    }
    failIfRequested(req);
  },

  async clientStream(reqs: AsyncIterable<EchoRequest>, ctx: HandlerContext) {
    const messages: string[] = [];
    let last: EchoRequest | undefined;
    for await (const req of reqs) {
      // Waiting per message makes this a slow consumer, so tests can watch
      // backpressure build on the request side.
      await sleep(req.delayMs, ctx.signal);
      failIfRequested(req);
      messages.push(req.message);
      last = req;
    }
    return create(EchoResponseSchema, {
      message: messages.join(','),
      index: messages.length,
      payload: last ? responsePayload({ payload: new Uint8Array(0), responseSize: last.responseSize }) : new Uint8Array(0),
    });
  },

  async *bidiStream(reqs: AsyncIterable<EchoRequest>, ctx: HandlerContext) {
    let index = 0;
    for await (const req of reqs) {
      await sleep(req.delayMs, ctx.signal);
      failIfRequested(req);
      yield answer(req, index++);
    }
  },
};
