// A grpc-js server for the shop.proto fixture: the upstream that speaks only
// gRPC, behind the transcoding sidecar. Messages go through protobufjs with the
// proto names; the handlers echo what they were sent so tests can see how a
// REST request was translated.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

export const SHOP_PROTO_DIR = join(import.meta.dirname, '../fixtures/transcode');

type Obj = Record<string, unknown>;

function shopRoot(): protobuf.Root {
  const root = new protobuf.Root();
  const parsed = protobuf.parse(readFileSync(join(SHOP_PROTO_DIR, 'shop/v1/shop.proto'), 'utf8'), root, { keepCase: true });
  for (const i of parsed.imports ?? []) {
    const bundled = protobuf.common.get(i) as { nested?: protobuf.INamespace['nested'] } | null;
    if (bundled?.nested) root.addJSON(bundled.nested);
  }
  return root;
}

export const SHOP_ROOT = shopRoot();

function codec(name: string): { serialize: (o: Obj) => Buffer; deserialize: (b: Buffer) => Obj } {
  const type = SHOP_ROOT.lookupType(name);
  type.resolveAll();
  return {
    serialize: (o) => Buffer.from(type.encode(type.fromObject(o)).finish()),
    deserialize: (b) => type.toObject(type.decode(b), { longs: String, enums: String, defaults: false }) as Obj,
  };
}

function method(name: string, req: string, res: string, responseStream = false): grpc.MethodDefinition<Obj, Obj> {
  const q = codec(req);
  const r = codec(res);
  return {
    path: `/shop.v1.Shop/${name}`,
    requestStream: false,
    responseStream,
    requestSerialize: q.serialize,
    requestDeserialize: q.deserialize,
    responseSerialize: r.serialize,
    responseDeserialize: r.deserialize,
  };
}

export const SHOP_SERVICE = {
  GetItem: method('GetItem', 'shop.v1.GetItemRequest', 'shop.v1.Item'),
  ListItems: method('ListItems', 'shop.v1.ListItemsRequest', 'shop.v1.ListItemsResponse'),
  CreateItem: method('CreateItem', 'shop.v1.CreateItemRequest', 'shop.v1.Item'),
  UpdateItem: method('UpdateItem', 'shop.v1.Item', 'shop.v1.Item'),
  Fail: method('Fail', 'shop.v1.FailRequest', 'google.protobuf.Empty'),
  WatchItems: method('WatchItems', 'shop.v1.WatchItemsRequest', 'shop.v1.Item', true),
} satisfies grpc.ServiceDefinition;

/** Every JSON kind, for the mapping's output. */
export const FULL_ITEM: Obj = {
  display_name: 'Blue mug',
  price_micros: '9007199254740993',
  stock: '18446744073709551615',
  shelf_rank: -3,
  weight: 0.25,
  on_sale: true,
  thumbnail: Buffer.from([0xfb, 0xff, 0x00, 0x10]),
  color: 'COLOR_BLUE',
  tags: ['kitchen', 'ceramic'],
  counts: { warehouse: 4, shop: 0 },
  created: { seconds: '1700000000', nanos: 120000000 },
  shelf_life: { seconds: '3600', nanos: 500000000 },
  note: { value: 'fragile' },
  big: { value: '-5' },
  attributes: { fields: { glaze: { stringValue: 'matte' }, sizes: { listValue: { values: [{ numberValue: 1 }, { boolValue: true }, { nullValue: 0 }] } } } },
  mask: { paths: ['display_name', 'size.width_mm'] },
  sku_code: 'MUG-1',
  discount: 0,
  size: { width_mm: 80, height_mm: 95 },
};

function meta(pairs: Record<string, string>): grpc.Metadata {
  const m = new grpc.Metadata();
  for (const [k, v] of Object.entries(pairs)) m.set(k, v);
  return m;
}

export interface ShopServer {
  port: number;
  /** The last request each method received, as protobufjs objects with proto names. */
  last: Map<string, Obj>;
  close(): Promise<void>;
}

export async function startShopServer(): Promise<ShopServer> {
  const server = new grpc.Server();
  const last = new Map<string, Obj>();
  const impl: grpc.UntypedServiceImplementation = {
    GetItem(call: grpc.ServerUnaryCall<Obj, Obj>, cb: grpc.sendUnaryData<Obj>) {
      last.set('GetItem', call.request);
      const name = call.request.name as string;
      call.sendMetadata(meta({ 'x-served-by': 'grpc-js' }));
      if (name.includes('missing')) return cb({ code: grpc.status.NOT_FOUND, details: `no item ${name}`, metadata: meta({ 'x-trail': 'yes' }) });
      cb(null, { ...FULL_ITEM, name }, meta({ 'x-trail': 'ok' }));
    },
    ListItems(call: grpc.ServerUnaryCall<Obj, Obj>, cb: grpc.sendUnaryData<Obj>) {
      last.set('ListItems', call.request);
      const n = (call.request.page_size as number | undefined) ?? 2;
      cb(null, { items: Array.from({ length: n }, (_, i) => ({ name: `shelves/${String(call.request.shelf_id)}/items/${i}` })), next_page_token: 'next' });
    },
    CreateItem(call: grpc.ServerUnaryCall<Obj, Obj>, cb: grpc.sendUnaryData<Obj>) {
      last.set('CreateItem', call.request);
      const item = (call.request.item as Obj | undefined) ?? {};
      cb(null, { ...item, name: `shelves/${String(call.request.shelf_id)}/items/new` });
    },
    UpdateItem(call: grpc.ServerUnaryCall<Obj, Obj>, cb: grpc.sendUnaryData<Obj>) {
      last.set('UpdateItem', call.request);
      cb(null, call.request);
    },
    Fail(call: grpc.ServerUnaryCall<Obj, Obj>, cb: grpc.sendUnaryData<Obj>) {
      last.set('Fail', call.request);
      cb({ code: call.request.code as number, details: call.request.message as string, metadata: meta({ 'x-why': 'asked' }) });
    },
    WatchItems(call: grpc.ServerWritableStream<Obj, Obj>) {
      last.set('WatchItems', call.request);
      const count = (call.request.count as number | undefined) ?? 3;
      const failAfter = (call.request.fail_after as number | undefined) ?? 0;
      for (let i = 0; i < count; i++) {
        if (failAfter > 0 && i === failAfter) {
          call.emit('error', { code: grpc.status.ABORTED, details: 'stopped on purpose' });
          return;
        }
        call.write({ name: `shelves/${String(call.request.shelf_id)}/items/${i}`, shelf_rank: i });
      }
      call.end();
    },
  };
  server.addService(SHOP_SERVICE, impl);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { port, last, close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())) };
}
