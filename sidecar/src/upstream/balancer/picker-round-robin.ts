import type { Endpoint } from './endpoint.ts';
import type { Picker } from './picker.ts';

/** Each call to the next endpoint in turn. */
export class RoundRobinPicker implements Picker {
  private next = 0;

  pick(usable: readonly Endpoint[]): Endpoint {
    const e = usable[this.next % usable.length]!;
    this.next = (this.next + 1) % 1_000_000_007;
    return e;
  }
}
