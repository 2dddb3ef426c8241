// A header's value as Node hands it over: a string, an array for a header
// repeated, a number for a few, or nothing.

/** The first value of a header (a repeated header is an array), as text. */
export function headerText(v: string | readonly string[] | number | undefined): string | undefined {
  if (v === undefined) return undefined;
  return Array.isArray(v) ? (v as readonly string[])[0] : String(v);
}
