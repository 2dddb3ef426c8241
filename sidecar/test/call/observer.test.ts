// composeObservers: the one observer the data planes report to, fanning each
// event out to the observers that handle it (metrics, the access log, the
// balancer, the connection view, the tap), in their order, with a fault in one
// reported and contained.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { composeObservers, noopObserver, type ConnectionRecord, type Observer } from '../../src/call/observer.ts';
import { endedCall } from '../observe/records.ts';

const conn: ConnectionRecord = { id: 7, side: 'downstream', httpVersion: '2', peer: '10.0.0.9:40000', openTime: 0, closeTime: 0, calls: 0, active: 0 };

/** An observer that handles only `events`, logging each as `name:event` (the rest are noopObserver's). */
function logging(name: string, log: string[], events: readonly (keyof Observer)[]): Observer {
  const o: Observer = { ...noopObserver };
  for (const e of events) o[e] = () => void log.push(`${name}:${e}`);
  return o;
}

function everyEvent(o: Observer): void {
  const call = endedCall();
  o.callStarted(call);
  o.connectionOpened(conn);
  o.goaway('client', 0);
  o.callEnded(call);
  o.connectionClosed(conn);
}

describe('composeObservers', () => {
  it('gives each event to every observer that handles it, in order', () => {
    const log: string[] = [];
    const composed = composeObservers(
      [
        logging('metrics', log, ['callStarted', 'callEnded', 'connectionOpened', 'connectionClosed', 'goaway']),
        logging('accessLog', log, ['callEnded']),
        noopObserver,
        logging('balancer', log, ['connectionClosed']),
        logging('tap', log, ['callEnded', 'connectionOpened', 'connectionClosed']),
      ],
      (err) => assert.fail(`no observer throws here: ${String(err)}`),
    );
    everyEvent(composed);
    assert.deepEqual(log, [
      'metrics:callStarted',
      'metrics:connectionOpened',
      'tap:connectionOpened',
      'metrics:goaway',
      'metrics:callEnded',
      'accessLog:callEnded',
      'tap:callEnded',
      'metrics:connectionClosed',
      'balancer:connectionClosed',
      'tap:connectionClosed',
    ]);
  });

  it('reports an observer that throws and goes on with the others', () => {
    const log: string[] = [];
    const faults: string[] = [];
    const throwing: Observer = { ...noopObserver, callEnded: () => { throw new Error('observer broke'); } };
    const composed = composeObservers([throwing, logging('metrics', log, ['callEnded'])], (err) => faults.push((err as Error).message));
    composed.callEnded(endedCall());
    composed.callEnded(endedCall());
    assert.deepEqual(faults, ['observer broke', 'observer broke']);
    assert.deepEqual(log, ['metrics:callEnded', 'metrics:callEnded']);
  });

  it('without a fault handler, an observer that throws stops the event there and the error reaches the caller', () => {
    const log: string[] = [];
    const throwing: Observer = { ...noopObserver, callStarted: () => { throw new Error('observer broke'); } };
    const composed = composeObservers([logging('first', log, ['callStarted']), throwing, logging('last', log, ['callStarted'])]);
    assert.throws(() => composed.callStarted(endedCall()), /observer broke/);
    assert.deepEqual(log, ['first:callStarted']);
  });

  it('is the no-op observer when no observer handles anything, and the observer itself when there is one', () => {
    assert.equal(composeObservers([noopObserver, noopObserver]), noopObserver);
    const only = logging('only', [], ['callEnded']);
    assert.equal(composeObservers([noopObserver, only]), only);
  });
});
