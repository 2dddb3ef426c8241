// Reads a stream of JSON values (one document, or JSON lines) as it passes and
// reports where each value starts, by its path, without holding the text: the
// state is a path of bounded depth and at most one short string or number being
// read. Deeper values are still walked (depth is counted) but never reported,
// and longer strings are skipped; a response of any size costs the same memory.

/** Values deeper than this are walked but not reported. */
const MAX_PATH = 8;
/** Strings and numbers longer than this are reported cut to it. */
const MAX_TEXT = 64;

export type JsonPath = readonly (string | number)[];

export interface JsonPathVisitor {
  /**
   * A value starts at `path` (its length is the value's depth): `value` is the
   * string, number, boolean or null, or undefined for an object or array.
   * Strings and numbers are reported once read whole. `container` tells an
   * object (`{`) from an array (`[`); it is '' for every other value.
   */
  value(path: JsonPath, value: string | number | boolean | null | undefined, container: '' | '{' | '['): void;
  /** The object or array at `path` closed. */
  close(path: JsonPath): void;
  /** A top-level value ended (the next one, in JSON lines, starts afresh). */
  top(): void;
}

const enum S { Value, Str, StrEscape, Num, Lit, After, KeyOrEnd, Key, KeyEscape, Colon }

const OBJECT = 1;
const ARRAY = 2;

export class JsonPathScanner {
  private state = S.Value;
  private depth = 0;
  /** Container kind per depth (only for depth < MAX_PATH + 1 is the path kept). */
  private readonly kinds: number[] = [];
  private readonly path: (string | number)[] = [];
  /** An array was just opened: `]` may close it. */
  private fresh = false;
  private text = '';
  private textLen = 0;
  /** Set on the first byte that is not JSON: nothing more is read. */
  broken = false;

  constructor(private readonly visitor: JsonPathVisitor) {}

  push(chunk: Buffer): void {
    if (this.broken) return;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      switch (this.state) {
        case S.Str:
          if (c === 0x22) this.endString();
          else if (c === 0x5c) this.state = S.StrEscape;
          else this.addChar(c);
          break;
        case S.StrEscape:
          this.addChar(c);
          this.state = S.Str;
          break;
        case S.Key:
          if (c === 0x22) {
            this.setKey(this.text);
            this.state = S.Colon;
          } else if (c === 0x5c) this.state = S.KeyEscape;
          else this.addChar(c);
          break;
        case S.KeyEscape:
          this.addChar(c);
          this.state = S.Key;
          break;
        case S.Num:
        case S.Lit:
          if (isLiteralByte(c)) {
            this.addChar(c);
            break;
          }
          this.endScalar();
          i--; // the byte that ended it is read again in the new state
          break;
        default:
          if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) break;
          this.structural(c);
          if (this.broken) return;
      }
    }
  }

  private structural(c: number): void {
    switch (this.state) {
      case S.Value:
        return this.startValue(c);
      case S.KeyOrEnd:
        if (c === 0x22) return this.startText(S.Key);
        if (c === 0x7d) return this.closeContainer(OBJECT);
        return this.fail();
      case S.Colon:
        if (c === 0x3a) {
          this.state = S.Value;
          return;
        }
        return this.fail();
      case S.After: {
        const kind = this.kinds[this.depth - 1];
        if (c === 0x2c && kind === OBJECT) {
          this.state = S.KeyOrEnd;
          return;
        }
        if (c === 0x2c && kind === ARRAY) {
          if (this.depth <= MAX_PATH) (this.path[this.depth - 1] as number)++;
          this.state = S.Value;
          return;
        }
        if (c === 0x7d && kind === OBJECT) return this.closeContainer(OBJECT);
        if (c === 0x5d && kind === ARRAY) return this.closeContainer(ARRAY);
        return this.fail();
      }
      default:
        return this.fail();
    }
  }

  private startValue(c: number): void {
    const fresh = this.fresh;
    this.fresh = false;
    if (c === 0x7b || c === 0x5b) {
      this.report(undefined, c === 0x7b ? '{' : '[');
      const kind = c === 0x7b ? OBJECT : ARRAY;
      this.kinds[this.depth] = kind;
      this.depth++;
      if (this.depth <= MAX_PATH) this.path[this.depth - 1] = kind === ARRAY ? 0 : '';
      this.state = kind === OBJECT ? S.KeyOrEnd : S.Value;
      this.fresh = kind === ARRAY;
      return;
    }
    if (c === 0x5d && fresh) return this.closeContainer(ARRAY);
    if (c === 0x22) return this.startText(S.Str);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      this.startText(S.Num);
      this.addChar(c);
      return;
    }
    if (c === 0x74 || c === 0x66 || c === 0x6e) {
      this.startText(S.Lit);
      this.addChar(c);
      return;
    }
    this.fail();
  }

  private startText(state: S): void {
    this.state = state;
    this.text = '';
    this.textLen = 0;
  }

  private addChar(c: number): void {
    if (this.textLen < MAX_TEXT) this.text += String.fromCharCode(c);
    this.textLen++;
  }

  private endString(): void {
    this.report(this.text);
    this.valueDone();
  }

  private endScalar(): void {
    const t = this.text;
    if (this.state === S.Num) {
      const n = Number(t);
      if (Number.isNaN(n)) return this.fail();
      this.report(n);
    } else if (t === 'true' || t === 'false') this.report(t === 'true');
    else if (t === 'null') this.report(null);
    else return this.fail();
    this.valueDone();
  }

  /** Bytes after a top-level scalar in a stream end it too; call at the end of input. */
  end(): void {
    if (!this.broken && this.depth === 0 && (this.state === S.Num || this.state === S.Lit)) this.endScalar();
  }

  private setKey(key: string): void {
    if (this.depth <= MAX_PATH) this.path[this.depth - 1] = key;
  }

  private report(value: string | number | boolean | null | undefined, container: '' | '{' | '[' = ''): void {
    if (this.depth <= MAX_PATH) {
      this.path.length = this.depth;
      this.visitor.value(this.path, value, container);
    }
  }

  private closeContainer(kind: number): void {
    if (this.kinds[this.depth - 1] !== kind) return this.fail();
    this.depth--;
    if (this.depth <= MAX_PATH) {
      this.path.length = this.depth;
      this.visitor.close(this.path);
    }
    this.valueDone();
  }

  private valueDone(): void {
    if (this.depth === 0) {
      this.state = S.Value;
      this.visitor.top();
    } else this.state = S.After;
  }

  private fail(): void {
    this.broken = true;
  }
}

function isLiteralByte(c: number): boolean {
  // digits, letters, '+', '-', '.' : the bytes of numbers and true/false/null
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x2b || c === 0x2d || c === 0x2e;
}
