"""interop_python.py: a gRPC C-core (grpcio) server and client for
test/reliability/interop-*.test.ts, the twin of interop-go (main.go): the same
methods, the same cases, the same output, so any client can call any server.

    interop_python.py server            serves on a free loopback port and prints it
    interop_python.py client ADDR CASE  makes one call and prints what it saw as JSON

Messages are raw bytes (no .proto, no generated code)."""
import json
import sys
import threading
import time
from concurrent import futures

import grpc


def peer_fields(metadata):
    """The x-peer-* fields, each value as received, binary ones as hex."""
    out = {}
    for key, value in metadata or ():
        if key.startswith('x-peer'):
            out.setdefault(key, []).append(value.hex() if isinstance(value, bytes) else value)
    return out


def unary(request, context):
    echo = tuple((k, v) for k, v in context.invocation_metadata() if k.startswith('x-peer'))
    context.send_initial_metadata(echo)
    context.set_trailing_metadata(echo)
    return json.dumps(peer_fields(context.invocation_metadata()), separators=(',', ':')).encode()


def stream(request, context):
    for i in range(int(request)):
        yield str(i).encode()
        time.sleep(0.02)


def fail(request, context):
    context.set_trailing_metadata((('x-peer-reason', 'precondition'),))
    context.abort(grpc.StatusCode.FAILED_PRECONDITION, 'the order is closed: ünïcode')


def hang(request, context):
    ended = threading.Event()
    # False when the call ended before this handler ran (a short deadline on a busy machine).
    if context.add_callback(ended.set):
        ended.wait()
    code = 'DeadlineExceeded' if context.time_remaining() is not None and context.time_remaining() <= 0 else 'Canceled'
    print(f'ended /interop.Echo/Hang {code}', flush=True)
    return b''


HANDLERS = {
    '/interop.Echo/Unary': grpc.unary_unary_rpc_method_handler(unary),
    '/interop.Echo/Stream': grpc.unary_stream_rpc_method_handler(stream),
    '/interop.Echo/Fail': grpc.unary_unary_rpc_method_handler(fail),
    '/interop.Echo/Hang': grpc.unary_unary_rpc_method_handler(hang),
}


class Generic(grpc.GenericRpcHandler):
    def service(self, details):
        return HANDLERS.get(details.method)


def serve():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers((Generic(),))
    port = server.add_insecure_port('127.0.0.1:0')
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


METADATA = (('x-peer-twice', 'first'), ('x-peer-twice', 'second'),
            ('x-peer-twice-bin', b'\x00\x01'), ('x-peer-twice-bin', b'\xff\xfe\xfd'))


def call(address, case):
    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=20)
    result = {'code': 0, 'message': '', 'messages': [], 'headers': {}, 'trailers': {}}
    method = {'unary': 'Unary', 'stream': 'Stream', 'fail': 'Fail', 'deadline': 'Hang', 'cancel': 'Hang'}[case]
    path = f'/interop.Echo/{method}'
    if case == 'stream':
        rpc = channel.unary_stream(path)(b'50', metadata=METADATA)
    else:
        rpc = channel.unary_unary(path).future(b'go', metadata=METADATA, timeout=0.5 if case == 'deadline' else None)
        if case == 'cancel':
            threading.Timer(0.5, rpc.cancel).start()
    try:
        if case == 'stream':
            for message in rpc:
                result['messages'].append(message.decode())
        else:
            result['messages'].append(rpc.result().decode())
    except grpc.FutureCancelledError:
        pass
    except grpc.RpcError:
        pass
    if case != 'cancel' or not rpc.cancelled():
        result['headers'] = peer_fields(rpc.initial_metadata())
        result['trailers'] = peer_fields(rpc.trailing_metadata())
        result['code'] = rpc.code().value[0]
        result['message'] = rpc.details() or ''
    else:
        result['code'] = grpc.StatusCode.CANCELLED.value[0]
        result['message'] = 'Locally cancelled by application!'
    print(json.dumps(result, separators=(',', ':')), flush=True)
    channel.close()


if __name__ == '__main__':
    if sys.argv[1:2] == ['server']:
        serve()
    elif len(sys.argv) == 4 and sys.argv[1] == 'client':
        call(sys.argv[2], sys.argv[3])
    else:
        sys.exit('usage: interop_python.py server | interop_python.py client ADDR CASE')
