// rpcscope_load_skew_ratio: max / mean of the per-endpoint call rate over the
// last 30 s, over every known endpoint (idle ones count as 0). 1 is perfect
// balance; N endpoints with all the load on one gives N. Counted in one-second
// slots per endpoint, so a call costs an increment and a scrape sums 30 numbers
// per endpoint. Timed by the data plane's clock (clock.ts), which a call's end
// has read already: Date.now() is a call into V8's runtime on every call.
import { now } from '../clock.ts';

const SLOTS = 30;
const SLOT_MS = 1000;

class Window {
  readonly counts = new Float64Array(SLOTS);
  slot = 0;

  /** Forget the slots that fell out of the window since the last touch. */
  advance(slot: number): void {
    const gap = slot - this.slot;
    if (gap <= 0) return;
    if (gap >= SLOTS) this.counts.fill(0);
    else for (let s = this.slot + 1; s <= slot; s++) this.counts[s % SLOTS] = 0;
    this.slot = slot;
  }

  total(): number {
    let t = 0;
    for (const c of this.counts) t += c;
    return t;
  }
}

export class LoadSkew {
  private readonly windows = new Map<string, Window>();

  /** @param clock milliseconds, any origin: only whole seconds between readings count. */
  constructor(private readonly clock: () => number = now) {}

  /** One call went to `endpoint`. */
  record(endpoint: string): void {
    const slot = Math.floor(this.clock() / SLOT_MS);
    let w = this.windows.get(endpoint);
    if (!w) {
      w = new Window();
      w.slot = slot;
      this.windows.set(endpoint, w);
    }
    w.advance(slot);
    w.counts[slot % SLOTS]!++;
  }

  /** The ratio over `known` endpoints; 1 when nothing was called in the window. */
  ratio(known: readonly string[]): number {
    if (known.length === 0) return 1;
    const slot = Math.floor(this.clock() / SLOT_MS);
    let max = 0;
    let sum = 0;
    for (const endpoint of known) {
      const w = this.windows.get(endpoint);
      if (!w) continue;
      w.advance(slot);
      const t = w.total();
      sum += t;
      if (t > max) max = t;
    }
    // Endpoints no longer known keep no window.
    for (const endpoint of this.windows.keys()) if (!known.includes(endpoint)) this.windows.delete(endpoint);
    return sum === 0 ? 1 : max / (sum / known.length);
  }
}
