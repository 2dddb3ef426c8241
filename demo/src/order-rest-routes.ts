// The REST face of OrderService, following its google.api.http rules (gRPC
// transcoding): JSON bodies in the proto3 JSON mapping, errors as a
// google.rpc.Status JSON body with the transcoding HTTP status.
import { create, fromJson, toJson } from '@bufbuild/protobuf';
import type { JsonValue } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  CreateOrderRequestSchema,
  GetOrderRequestSchema,
  ListOrdersRequestSchema,
  ListOrdersResponseSchema,
  OrderSchema,
} from './gen/order/v1/order_pb.ts';
import { httpStatusFromCode } from './grpc-http-status.ts';
import type { HttpRequest, HttpResponse } from './h2c-listener.ts';
import { intParam, sendJson } from './http-json.ts';
import type { CallInfo, OrderOperations } from './order-operations.ts';

/** A create body is small; past this the caller is misusing the route, and buffering it whole would not be bounded. */
const MAX_BODY_BYTES = 1 << 20;
const ORDER_ID = /^\/v1\/orders\/([^/]+)$/;

/** Serves the request and returns true when it is an OrderService REST route; false leaves it to the RPC handler. */
export function handleOrderRest(req: HttpRequest, res: HttpResponse, ops: OrderOperations, shutdown: AbortSignal): boolean {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const path = url.pathname;
  if (!path.startsWith('/v1/')) return false;
  const method = req.method ?? 'GET';
  const call = callInfo(req, res, shutdown);

  let match: RegExpExecArray | null;
  if (method === 'GET' && (match = ORDER_ID.exec(path))) {
    const id = decodeURIComponent(match[1] ?? '');
    respond(res, async () => toJson(OrderSchema, await ops.getOrder(create(GetOrderRequestSchema, { id }), call)));
  } else if (method === 'GET' && path === '/v1/orders') {
    // Transcoding binds query parameters by proto field name or JSON name.
    const pageSize = intParam(url.searchParams, url.searchParams.has('pageSize') ? 'pageSize' : 'page_size', 0, -1, 2 ** 31 - 1);
    const customer = url.searchParams.get('customer') ?? '';
    respond(res, async () => {
      const orders = await ops.listOrders(create(ListOrdersRequestSchema, { pageSize, customer }), call);
      return toJson(ListOrdersResponseSchema, create(ListOrdersResponseSchema, { orders }));
    });
  } else if (method === 'POST' && path === '/v1/orders') {
    respond(res, async () => {
      const body = await readJson(req);
      let request;
      try {
        request = fromJson(CreateOrderRequestSchema, body, { ignoreUnknownFields: true });
      } catch (err) {
        throw new ConnectError(`invalid CreateOrderRequest: ${(err as Error).message}`, Code.InvalidArgument);
      }
      return toJson(OrderSchema, await ops.createOrder(request, call));
    });
  } else {
    sendStatus(res, new ConnectError(`no route for ${method} ${path}`, Code.NotFound));
  }
  return true;
}

function callInfo(req: HttpRequest, res: HttpResponse, shutdown: AbortSignal): CallInfo {
  const gone = new AbortController();
  res.once('close', () => gone.abort(new ConnectError('client closed the request', Code.Canceled)));
  return {
    signal: AbortSignal.any([gone.signal, shutdown]),
    header: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    },
  };
}

function respond(res: HttpResponse, produce: () => Promise<JsonValue>): void {
  produce().then(
    (body) => {
      if (!res.writableEnded && !res.destroyed) sendJson(res, 200, body);
    },
    (err: unknown) => {
      if (!res.writableEnded && !res.destroyed) sendStatus(res, ConnectError.from(err));
    },
  );
}

function sendStatus(res: HttpResponse, err: ConnectError): void {
  sendJson(res, httpStatusFromCode(err.code), { code: err.code, message: err.rawMessage, details: [] });
}

async function readJson(req: HttpRequest): Promise<JsonValue> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ConnectError(`body larger than ${MAX_BODY_BYTES} bytes`, Code.InvalidArgument);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as JsonValue;
  } catch {
    throw new ConnectError('body is not valid JSON', Code.InvalidArgument);
  }
}
