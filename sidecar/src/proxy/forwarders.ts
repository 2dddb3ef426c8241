// The three ways a call is forwarded, as one value the listener is built with:
// the pipeline passes the real ones; a test may wrap them to inject a fault and
// show that it stays inside the call that hit it.
import { forwardRequest, forwardStream } from './forward-by-version.ts';
import { forwardUpgrade } from './forward-upgrade.ts';

export interface Forwarders {
  h1: typeof forwardRequest;
  h2: typeof forwardStream;
  upgrade: typeof forwardUpgrade;
}

export const FORWARDERS: Forwarders = { h1: forwardRequest, h2: forwardStream, upgrade: forwardUpgrade };
