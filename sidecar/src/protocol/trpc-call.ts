// tRPC over HTTP (https://trpc.io/docs/rpc, v10 and v11): which procedures one
// request calls, and each one's outcome read off the response as it passes.
//
//   request                                    response body
//   GET  <prefix>/a.b?input=…                  {"result":{"data":…}} | {"error":{…}}
//   POST <prefix>/a.b  (mutation)              the same
//   GET|POST <prefix>/a.b,c.d?batch=1          [<one per procedure, in path order>]
//     with `trpc-accept: application/jsonl`    JSON lines (v11 httpBatchStreamLink): a head
//                                              {"0":[[0],[null,0,<chunk>]],…} naming one chunk
//                                              per procedure, then [<chunk>,<status>,[[<value>],…]]
//                                              lines in the order procedures settle
//   GET  <prefix>/a.b  (text/event-stream)     SSE (v11 httpSubscriptionLink); an error is an
//                                              `event: serialized-error`
//
// An error is {"message","code":<JSON-RPC number>,"data":{"code":<name>,"httpStatus"}}.
// Only the start of each procedure's value is looked at: `result` or `error`,
// and an error's code. Memory stays bounded whatever the body's size.
import { JsonPathScanner, type JsonPath, type JsonPathVisitor } from './json-path-scanner.ts';
import { trpcErrorToGrpcCode, type TrpcErrorFacts } from './trpc-codes.ts';
import { GrpcCode } from './status-codes.ts';

/** Procedures named in one request past this many are not counted one by one. */
export const MAX_BATCH = 256;
/** An SSE line longer than this is skipped (an error event is a few hundred bytes). */
const MAX_SSE_LINE = 64 * 1024;

export interface TrpcProcedure {
  /** The procedure path (`user.getUser`); checked against the route guard later. */
  readonly path: string;
  /** The gRPC code its result or error said; undefined until read. */
  code: number | undefined;
  /** When its outcome was read (streamed batches only: each settles on its own). */
  settledTime: number | undefined;
}

type Mode = 'single' | 'batch' | 'batch_array' | 'jsonl' | 'sse' | 'none';

const enum Place { Other, Result, Error, ErrorCode, ErrorDataCode, ErrorDataStatus }

export class TrpcCall implements JsonPathVisitor {
  readonly procedures: TrpcProcedure[];
  readonly batch: boolean;
  private mode: Mode;
  private scanner: JsonPathScanner | undefined;
  private tops = 0;
  /** JSON lines: chunk id -> procedure index, from the head line. */
  private readonly chunks = new Map<number, number>();
  private lineChunk: number | undefined;
  private pending: TrpcErrorFacts | undefined;
  private pendingIndex = -1;
  private sse: { line: number[]; skipping: boolean; event: string; data: string } | undefined;
  private now: () => number = () => 0;

  constructor(names: readonly string[], batch: boolean) {
    this.procedures = names.map((path) => ({ path, code: undefined, settledTime: undefined }));
    this.batch = batch;
    this.mode = batch ? 'batch' : 'single';
  }

  /** A subscription answered over SSE: one long-lived call. */
  get streaming(): boolean {
    return this.mode === 'sse';
  }

  responseHeaders(contentType: string | undefined, now: () => number): void {
    this.now = now;
    const media = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
    if (media === 'text/event-stream') {
      this.mode = 'sse';
      this.sse = { line: [], skipping: false, event: '', data: '' };
    } else if (media !== 'application/json' && !media.endsWith('+json')) {
      this.mode = 'none';
    }
    if (this.mode !== 'sse' && this.mode !== 'none') this.scanner = new JsonPathScanner(this);
  }

  responseData(chunk: Buffer): void {
    if (this.mode === 'sse') return this.sseData(chunk);
    if (this.scanner === undefined || this.allSettled()) return;
    this.scanner.push(chunk);
  }

  finish(): void {
    this.scanner?.end();
    this.flushPending();
  }

  private allSettled(): boolean {
    for (const p of this.procedures) if (p.code === undefined) return false;
    return this.pending === undefined;
  }

  // --- JSON bodies -------------------------------------------------------

  value(path: JsonPath, value: string | number | boolean | null | undefined, container: '' | '{' | '['): void {
    if (this.mode === 'batch') {
      // The first byte tells a plain batch (an array) from a streamed one (the JSON lines head).
      this.mode = container === '[' ? 'batch_array' : container === '{' ? 'jsonl' : 'none';
      return;
    }
    if (this.mode === 'single') return this.envelope(path, 0, 0, value);
    if (this.mode === 'batch_array') {
      if (path.length >= 1 && typeof path[0] === 'number') this.envelope(path, 1, path[0], value);
      return;
    }
    if (this.mode === 'jsonl') return this.jsonLine(path, value);
  }

  close(path: JsonPath): void {
    // The envelope (or the batch element) that held an error closed: its facts are all in.
    if (this.pending !== undefined && path.length <= this.envelopeDepth()) this.flushPending();
  }

  top(): void {
    this.flushPending();
    this.tops++;
    this.lineChunk = undefined;
  }

  private envelopeDepth(): number {
    return this.mode === 'single' ? 0 : this.mode === 'batch_array' ? 1 : 3;
  }

  private jsonLine(path: JsonPath, value: string | number | boolean | null | undefined): void {
    if (this.tops === 0) {
      // Head: {"<index>":[[<value or placeholder>],[null,0,<chunk>]]}
      const index = Number(path[0]);
      if (!Number.isInteger(index) || index < 0 || index >= this.procedures.length) return;
      if (path.length === 3 && path[1] === 1 && path[2] === 2 && typeof value === 'number') this.chunks.set(value, index);
      else if (path.length >= 3 && path[1] === 0 && path[2] === 0) this.envelope(path, 3, index, value);
      return;
    }
    // Chunk line: [<chunk>,<status>,[[<value>],…]]
    if (path.length === 1 && path[0] === 0 && typeof value === 'number') {
      this.lineChunk = value;
      return;
    }
    if (this.lineChunk === undefined || path.length < 3 || path[0] !== 2 || path[1] !== 0 || path[2] !== 0) return;
    const index = this.chunks.get(this.lineChunk);
    if (index !== undefined) this.envelope(path, 3, index, value);
  }

  /** A value inside one procedure's envelope, which starts at `depth` of the path. */
  private envelope(path: JsonPath, depth: number, index: number, value: string | number | boolean | null | undefined): void {
    const p = this.procedures[index];
    if (p === undefined || p.code !== undefined) return;
    switch (place(path, depth)) {
      case Place.Result:
        this.settle(p, GrpcCode.OK);
        return;
      case Place.Error:
        this.flushPending();
        this.pending = { name: undefined, httpStatus: undefined, number: undefined };
        this.pendingIndex = index;
        return;
      case Place.ErrorCode:
        if (this.pending && typeof value === 'number') this.pending.number = value;
        return;
      case Place.ErrorDataCode:
        if (this.pending && typeof value === 'string') this.pending.name = value;
        return;
      case Place.ErrorDataStatus:
        if (this.pending && typeof value === 'number') this.pending.httpStatus = value;
        return;
    }
  }

  private flushPending(): void {
    const e = this.pending;
    if (e === undefined) return;
    this.pending = undefined;
    const p = this.procedures[this.pendingIndex];
    if (p !== undefined && p.code === undefined) this.settle(p, trpcErrorToGrpcCode(e));
  }

  private settle(p: TrpcProcedure, code: number): void {
    p.code = code;
    if (this.mode === 'jsonl' || this.mode === 'sse') p.settledTime = this.now();
  }

  // --- SSE ---------------------------------------------------------------

  private sseData(chunk: Buffer): void {
    const s = this.sse!;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === 0x0a) {
        if (!s.skipping) this.sseLine(Buffer.from(s.line).toString('utf8').replace(/\r$/, ''));
        s.line.length = 0;
        s.skipping = false;
      } else if (!s.skipping) {
        if (s.line.length >= MAX_SSE_LINE) {
          s.skipping = true;
          s.line.length = 0;
        } else s.line.push(c);
      }
    }
  }

  private sseLine(line: string): void {
    const s = this.sse!;
    if (line === '') {
      if (s.event === 'serialized-error' && this.procedures[0]?.code === undefined) {
        const inner = new TrpcCall([this.procedures[0]!.path], false);
        inner.responseHeaders('application/json', this.now);
        // The event's data is the error shape itself, not wrapped in {"error":…}.
        inner.responseData(Buffer.from(`{"error":${s.data}}`));
        inner.finish();
        this.settle(this.procedures[0]!, inner.procedures[0]!.code ?? GrpcCode.UNKNOWN);
      }
      s.event = '';
      s.data = '';
      return;
    }
    if (line.startsWith('event:')) s.event = line.slice(6).trim();
    else if (line.startsWith('data:') && s.data.length < MAX_SSE_LINE) s.data += line.slice(5).trim();
  }
}

function place(path: JsonPath, depth: number): Place {
  const n = path.length - depth;
  const k = path[depth];
  if (n === 1) return k === 'result' ? Place.Result : k === 'error' ? Place.Error : Place.Other;
  if (k !== 'error') return Place.Other;
  if (n === 2) return path[depth + 1] === 'code' ? Place.ErrorCode : Place.Other;
  if (n === 3 && path[depth + 1] === 'data') {
    const f = path[depth + 2];
    return f === 'code' ? Place.ErrorDataCode : f === 'httpStatus' ? Place.ErrorDataStatus : Place.Other;
  }
  return Place.Other;
}

/**
 * The procedures a request names, or undefined when its path is not under
 * `prefix` (`/trpc`). Batched calls name several, comma-separated (percent-encoded
 * commas too); a name is kept as sent, for the route guard to admit or fold.
 */
export function trpcProcedures(path: string, prefix: string): string[] | undefined {
  if (prefix === '' || !path.startsWith(prefix) || path.charCodeAt(prefix.length) !== 0x2f) return undefined;
  const rest = path.slice(prefix.length + 1);
  if (rest === '') return undefined;
  const names = rest.replace(/%2C/gi, ',').split(',', MAX_BATCH);
  return names;
}

/** Whether the query string marks a batch (`batch=1`). */
export function trpcBatch(query: string): boolean {
  for (const pair of query.split('&')) if (pair === 'batch=1' || pair === 'batch=true') return true;
  return false;
}
