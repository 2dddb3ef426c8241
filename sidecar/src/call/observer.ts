// The one seam between the data plane and observation. The proxy calls these at
// fixed points of a call's and a connection's life; metrics, traces and the
// connection view plug in behind it. Disabled observation is the no-op object,
// not an `if` on every call.
import type { CallRecord } from './call-record.ts';
import type { HttpVersion } from '../protocol/vocabulary.ts';

export type ConnectionSide = 'downstream' | 'upstream';
export type GoawaySide = 'client' | 'upstream' | 'proxy';

export interface ConnectionRecord {
  readonly id: number;
  side: ConnectionSide;
  httpVersion: HttpVersion;
  /** Remote address as `ip:port`. */
  peer: string;
  openTime: number;
  closeTime: number;
  /** Calls started on this connection so far. */
  calls: number;
  /** Calls in flight on this connection now. */
  active: number;
}

export interface Observer {
  callStarted(call: CallRecord): void;
  callEnded(call: CallRecord): void;
  connectionOpened(conn: ConnectionRecord): void;
  connectionClosed(conn: ConnectionRecord): void;
  /** A GOAWAY frame received from `side` (client or upstream) or sent by the proxy. */
  goaway(side: GoawaySide, code: number): void;
}

export const noopObserver: Observer = {
  callStarted() {},
  callEnded() {},
  connectionOpened() {},
  connectionClosed() {},
  goaway() {},
};

/**
 * Fans every event out to several observers (metrics, traces, the connection view).
 * With `onFault`, an observer that throws is reported there and the others, and
 * the call, go on: observation must never break the traffic it watches.
 *
 * Each event calls only the observers that handle it: most take a few events and
 * leave the rest to noopObserver's methods (`...noopObserver`), and a call's two
 * events should not pay a call into each of them.
 */
export function composeObservers(observers: Observer[], onFault?: (err: unknown) => void): Observer {
  const list = observers.filter((o) => o !== noopObserver);
  if (list.length === 0) return noopObserver;
  if (!onFault && list.length === 1) return list[0]!;
  const fault = onFault ?? rethrow;
  const started = handlers(list, 'callStarted');
  const ended = handlers(list, 'callEnded');
  const opened = handlers(list, 'connectionOpened');
  const closed = handlers(list, 'connectionClosed');
  const goaways = handlers(list, 'goaway');
  // One loop per event rather than a shared helper taking a closure: no allocation per call.
  return {
    callStarted: (c) => { for (const o of started) try { o.callStarted(c); } catch (err) { fault(err); } },
    callEnded: (c) => { for (const o of ended) try { o.callEnded(c); } catch (err) { fault(err); } },
    connectionOpened: (c) => { for (const o of opened) try { o.connectionOpened(c); } catch (err) { fault(err); } },
    connectionClosed: (c) => { for (const o of closed) try { o.connectionClosed(c); } catch (err) { fault(err); } },
    goaway: (s, code) => { for (const o of goaways) try { o.goaway(s, code); } catch (err) { fault(err); } },
  };
}

/** The observers of `list` whose `event` is their own, not noopObserver's. */
function handlers(list: readonly Observer[], event: keyof Observer): Observer[] {
  return list.filter((o) => o[event] !== noopObserver[event]);
}

function rethrow(err: unknown): never {
  throw err;
}
