// The browser side of the gRPC-Web bridge test: Connect's gRPC-Web transport
// calling EchoService, bundled by esbuild and run in Chromium.
import { createClient } from '@connectrpc/connect';
import { createGrpcWebTransport } from '@connectrpc/connect-web';
import { EchoService } from '@rpcscope/demo/gen/echo/v1/echo_pb.ts';

declare global {
  var echoThroughSidecar: (baseUrl: string) => Promise<unknown>;
}

globalThis.echoThroughSidecar = async (baseUrl: string) => {
  const client = createClient(EchoService, createGrpcWebTransport({ baseUrl }));
  const unary = await client.echo({ message: 'from the browser' });
  const streamed: string[] = [];
  for await (const r of client.serverStream({ message: 'tick', responses: 4 })) streamed.push(`${r.message}#${r.index}`);
  let error: string | undefined;
  try {
    await client.echo({ message: 'x', failCode: 5 });
  } catch (e) {
    error = String((e as Error).message);
  }
  return { unary: unary.message, streamed, error };
};
