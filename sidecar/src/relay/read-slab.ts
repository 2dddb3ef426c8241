// Where a connection rpcscope opens itself reads into: consecutive pieces of one
// slab, as Node's Buffer pool hands out small allocations, instead of a buffer of
// 64 KiB allocated per read and shrunk to what came (what a socket's 'data'
// events cost: a malloc, a backing store and a realloc for every read). Given as
// the socket's `onread` (Node's net.connect option, for sockets it connects; a
// socket it accepts has none), the read's octets come as a Buffer of their own
// that nothing writes over: the next read goes after them in the slab, or into a
// new slab once too little is left. So what the read passes on (DATA payloads
// for the client's hop, a Connect error body the call's tap keeps) stays as it
// came, and a slab is freed by the garbage collector once nothing refers to any
// piece of it.
//
// | figure        | value  | why                                                                 |
// |---------------|--------|---------------------------------------------------------------------|
// | SLAB_SIZE     | 64 KiB | what libuv asks for a read: a bulk transfer reads as much at a time |
// | MIN_READ_ROOM | 16 KiB | a read's room at least: a full frame of the default size (RFC 9113 §4.2) |
//
// A connection keeps one slab while it is open; a piece it passes on keeps its
// slab alive, at most a slab's worth beside what the windows let the peer send.
import type net from 'node:net';

export const SLAB_SIZE = 64 * 1024;
export const MIN_READ_ROOM = 16 * 1024;

/** The `onread` option for a socket whose reads go to `deliver`, each a Buffer of its own. */
export function slabReads(deliver: (chunk: Buffer) => void): net.OnReadOpts {
  let slab = Buffer.allocUnsafeSlow(SLAB_SIZE);
  /** Where the socket's current read buffer starts in the slab. */
  let at = 0;
  return {
    // Called once as the socket starts, then after each read (its callback first).
    buffer: () => {
      if (slab.length - at < MIN_READ_ROOM) {
        slab = Buffer.allocUnsafeSlow(SLAB_SIZE);
        at = 0;
      }
      return slab.subarray(at);
    },
    callback: (n, buf) => {
      const chunk = (buf as Buffer).subarray(0, n);
      at += n;
      deliver(chunk);
      return true;
    },
  };
}
