// The three ways a call is forwarded, as one value the listener is built with:
// the pipeline passes the real ones; a test may wrap them to inject a fault and
// show that it stays inside the call that hit it.
import { forwardH1 } from './forward-h1.ts';
import { forwardH2 } from './forward-h2.ts';
import { forwardUpgrade } from './forward-upgrade.ts';

export interface Forwarders {
  h1: typeof forwardH1;
  h2: typeof forwardH2;
  upgrade: typeof forwardUpgrade;
}

export const FORWARDERS: Forwarders = { h1: forwardH1, h2: forwardH2, upgrade: forwardUpgrade };
