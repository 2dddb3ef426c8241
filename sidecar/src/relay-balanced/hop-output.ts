// What one hop of the balanced relay has queued for its next write, and when it
// is written (writeSoon: once per event loop iteration; afterRead: at once for
// the first read of a quiet loop, and only then what the read started or ended
// is recorded, whenWritten). Frames are
// written in place into a staging buffer — frame headers, header blocks encoded
// straight into it, small DATA payloads copied — so a call's frames cost no
// Buffer each; large payloads are queued by reference instead of copied. A write
// to a socket with nothing queued hands it the stage itself, and takes the stage
// back for the next hop that queues once the write went whole at once (as it
// does unless the peer reads slower than it is sent to); otherwise the write
// takes a copy of the staged octets (Node's pooled allocation for the small ones).
// A connection holds no stage while it has nothing to send, and one at most (16
// KiB, beside the windows' worth of octets it may be sent) while its peer stalls.
//
// | queued                           | how                            | why                                                   |
// |----------------------------------|--------------------------------|-------------------------------------------------------|
// | frame header, header block       | written into the stage         | no Buffer per frame, no block Buffer to copy after    |
// | payload under BY_REFERENCE       | copied into the stage          | a copy of a few hundred octets costs less than a piece of a writev |
// | payload of BY_REFERENCE or more  | a piece of its own, not copied | the copy would cost more than the piece               |
// | the write                        | one write; corked pieces when any went by reference | one system call either way            |
// | the stage, to an idle socket     | written as it is, reused once written whole | no copy; a stage still queued is the socket's |
// | a piece, to a socket with octets queued | copied                  | the queue may hold it long: a piece of a read slab would keep its slab |
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import { FRAME_HEADER_LENGTH } from '../h2/frame-types.ts';
import { writeFrameHeader } from '../h2/frames.ts';

/** A staging buffer's size: a read's worth of small frames. */
const STAGE_SIZE = 16 * 1024;
/** Payloads this large or more are written as pieces of their own. */
const BY_REFERENCE = 4 * 1024;
/** Staging buffers kept for reuse: as many as hops queue in one read, a few at most. */
const SPARE_MAX = 32;
const spare: Buffer[] = [];

export class HopOutput {
  private stage: Buffer | undefined;
  /** Where the stage's next octet goes. */
  private at = 0;
  /** Payloads queued by reference, and, for each, the stage's octets that go before it (up to its mark). */
  private refs: Buffer[] | undefined;
  private marks: number[] | undefined;
  /** Octets queued. */
  bytes = 0;

  /** Where the next octet goes in the buffer reserve() returned. */
  get offset(): number {
    return this.at;
  }

  /** The stage, with room for `n` octets from `offset`: write them, then advance(). */
  reserve(n: number): Buffer {
    let stage = this.stage;
    if (stage === undefined) stage = this.stage = n <= STAGE_SIZE ? (spare.pop() ?? Buffer.allocUnsafeSlow(STAGE_SIZE)) : Buffer.allocUnsafeSlow(n);
    else if (this.at + n > stage.length) {
      // Rare: more small frames queued in one read than the stage holds. A larger one takes over.
      const larger = Buffer.allocUnsafeSlow(Math.max(stage.length * 2, this.at + n));
      stage.copy(larger, 0, 0, this.at);
      release(stage);
      this.stage = stage = larger;
    }
    return stage;
  }

  /** `n` octets were written into the stage from `offset`. */
  advance(n: number): void {
    this.at += n;
    this.bytes += n;
  }

  /** A frame header (RFC 9113 §4.1). */
  frameHeader(length: number, type: number, flags: number, streamId: number): void {
    const b = this.reserve(FRAME_HEADER_LENGTH);
    writeFrameHeader(b, this.at, length, type, flags, streamId);
    this.advance(FRAME_HEADER_LENGTH);
  }

  /** Octets of `b` (a frame, or a payload after its header): copied when small, else a piece of their own. */
  put(b: Buffer): void {
    const n = b.length;
    if (n < BY_REFERENCE) {
      b.copy(this.reserve(n), this.at);
      this.advance(n);
      return;
    }
    (this.refs ??= []).push(b);
    (this.marks ??= []).push(this.at);
    this.bytes += n;
  }

  /** Writes what is queued to `socket` in one write, and empties. */
  writeTo(socket: net.Socket): void {
    const { stage, at, refs, marks } = this;
    this.reset();
    if (refs === undefined || marks === undefined) {
      if (stage === undefined) return;
      if (at > 0 && socket.writableLength === 0) {
        // Nothing waits in the socket's queue: the stage itself goes. Written whole
        // at once (the queue still empty after), the stage is free again; else the
        // queue holds it until it is written, and it is the socket's.
        socket.write(stage.subarray(0, at));
        if (socket.writableLength === 0) release(stage);
        return;
      }
      if (at > 0) socket.write(copied(stage, 0, at));
    } else {
      // Behind octets still queued, the pieces would wait in the socket: copies wait instead, so that a piece of a read slab (relay/read-slab.ts) does not keep its slab.
      const backlog = socket.writableLength > 0;
      socket.cork();
      let from = 0;
      for (let i = 0; i < refs.length; i++) {
        const mark = marks[i]!;
        if (mark > from) socket.write(copied(stage!, from, mark));
        from = mark;
        socket.write(backlog ? Buffer.from(refs[i]!) : refs[i]!);
      }
      if (at > from) socket.write(copied(stage!, from, at));
      socket.uncork();
    }
    if (stage !== undefined) release(stage);
  }

  /** Drops what is queued: the socket is gone. */
  clear(): void {
    const stage = this.stage;
    this.reset();
    if (stage !== undefined) release(stage);
  }

  private reset(): void {
    this.stage = undefined;
    this.at = 0;
    this.refs = undefined;
    this.marks = undefined;
    this.bytes = 0;
  }
}

/** A hop as the write schedule sees it: listed once until it flushes. */
export interface Writer {
  listed: boolean;
  flush(): void;
}

/**
 * Hops with frames queued. They are written once the event loop has handled every
 * socket that was readable (setImmediate runs after the poll phase): what several
 * clients' reads queue on one shared endpoint connection goes in one write, as
 * nghttpx and Envoy write at the end of an event loop iteration. A timer's frames
 * (a deadline, a PING) go the same way.
 *
 * When the loop is quiet (its last iteration read one socket at most: calls one
 * at a time, or a few a second), no other read is likely to join this one's
 * write, so the first read of an iteration is written as soon as it is parsed:
 * its call does not wait for the check phase (afterRead), and schedules none. A
 * later read in the same iteration is written after the poll phase as usual, so
 * a burst of reads still shares its writes. Iterations are told apart by libuv's
 * count of them (`performance.nodeTiming.uvMetricsInfo.loopCount`), read at each
 * read: a check phase scheduled only to count reads cost a quiet loop a second
 * poll and an immediate a read, about 6 µs of CPU a call at c=1.
 */
let dirty: Writer[] = [];
/** The list being flushed; the two trade places at each flush, so neither is allocated anew. */
let flushing: Writer[] = [];
let flushScheduled = false;
/** The event loop iteration of the last read (libuv's count), the reads handled in it, and whether the last iteration that read had one at most. */
let iteration = -1;
let reads = 0;
let quiet = false;
/** A hop's read is being parsed; what ended in it waits for afterRead (whenWritten). */
let reading = false;
/** The read being parsed is a quiet loop's first of its iteration: written at its end (afterRead), with no check phase. */
let writtenAtEnd = false;
let waiting: Written[] = [];
/** Whether a stream's last frame was written ahead of its read's end (streamEnded): once a read. */
let early = false;
let settling: Written[] = [];

/** The end of an event loop iteration that queued a write (the check phase): what is queued is written. */
function endOfIteration(): void {
  flushScheduled = false;
  flushDirty();
}

function flushDirty(): void {
  if (dirty.length === 0) return;
  // A flush only writes: no hop is queued to while this runs.
  const hops = dirty;
  dirty = flushing;
  flushing = hops;
  for (let i = 0; i < hops.length; i++) hops[i]!.flush();
  // Emptied by pops: setting `length` is a call into V8's runtime, a pop is not.
  while (hops.length > 0) hops.pop();
}

function scheduleFlush(): void {
  if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(endOfIteration);
  }
}

/** Lists `hop` (not listed yet) to be written once the event loop has read every readable socket. */
export function writeSoon(hop: Writer): void {
  hop.listed = true;
  dirty.push(hop);
  if (!writtenAtEnd) scheduleFlush();
}

/** Something whose bookkeeping can wait until the read that started or ended it has been written (a call's record, its end). */
export interface Written {
  written(): void;
}

/** A hop's socket is being read: what ends in the read may wait for afterRead (whenWritten). */
export function beforeRead(): void {
  reading = true;
  early = false;
  const n = performance.nodeTiming.uvMetricsInfo.loopCount;
  if (n !== iteration) {
    quiet = reads <= 1;
    reads = 0;
    iteration = n;
  }
  writtenAtEnd = quiet && reads === 0;
}

/**
 * `hop` queued a stream's last frame (an answer's END_STREAM). In a quiet loop's
 * first read it is written now, ahead of the read's end, so that what the read
 * does after it (the call's end, its tap) is not on the answer's way; once a
 * read, so that a read bringing many calls' ends still writes them together.
 */
export function streamEnded(hop: Writer): void {
  if (writtenAtEnd && !early) {
    early = true;
    hop.flush();
  }
}

/**
 * A hop's socket was read and parsed: in a quiet loop, the first read of an
 * iteration is written now; then what ended in the read is settled, so a
 * call's answer is not held up by the recording of its end.
 */
export function afterRead(): void {
  reading = false;
  reads++;
  if (writtenAtEnd) {
    writtenAtEnd = false;
    flushDirty();
  }
  if (waiting.length > 0) settle();
}

/** `w` ended: settled after the current read's writes (in a quiet loop) when one is being read, else now. */
export function whenWritten(w: Written): void {
  if (reading) waiting.push(w);
  else w.written();
}

function settle(): void {
  const list = waiting;
  waiting = settling;
  settling = list;
  for (let i = 0; i < list.length; i++) list[i]!.written();
  while (list.length > 0) list.pop();
}

/** The stage's octets [from, to) as a Buffer of their own: the stage is reused once the write is handed over. */
function copied(stage: Buffer, from: number, to: number): Buffer {
  const b = Buffer.allocUnsafe(to - from);
  stage.copy(b, 0, from, to);
  return b;
}

function release(stage: Buffer): void {
  if (stage.length === STAGE_SIZE && spare.length < SPARE_MAX) spare.push(stage);
}
