// The headers object the relays record a call with, built from the fields they
// read: node:http's shape (a repeated name's values in a list), inheriting
// nothing, so that a client's field named `constructor` or `__proto__` is a field
// like any other.
//
// Object.create(null) makes such an object, but V8 keeps it as a hash table from
// the start: about 900 octets for a gRPC request's 8 fields, on every call's
// request and response. An instance of a class whose prototype inherits nothing
// (and holds nothing, its `constructor` removed) keeps its fields in place as an
// object literal does: about 90.

export type HeaderBag = Record<string, string | string[]>;

class Fields {}
Object.setPrototypeOf(Fields.prototype, null);
Reflect.deleteProperty(Fields.prototype, 'constructor');

/** A name's values with one more: the first alone, then a list in order (the list `had` is added to in place). */
export function withValue(had: string | string[] | undefined, value: string): string | string[] {
  if (had === undefined) return value;
  if (Array.isArray(had)) {
    had.push(value);
    return had;
  }
  return [had, value];
}

/** Adds a field to `bag`: a repeated name's values become a list, in order. */
export function addField(bag: HeaderBag, name: string, value: string): void {
  bag[name] = withValue(bag[name], value);
}

/** An empty headers object that inherits nothing (`constructor`, `__proto__` and `toString` read as undefined). */
export function emptyHeaderBag(): HeaderBag {
  return new Fields() as HeaderBag;
}
