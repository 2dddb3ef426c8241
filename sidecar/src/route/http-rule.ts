// google.api.http path templates (googleapis google/api/http.proto, "Path
// template syntax") translated to rpcscope route templates:
//
//   Template = "/" Segments [ Verb ] ;     Segment  = "*" | "**" | LITERAL | Variable ;
//   Variable = "{" FieldPath [ "=" Segments ] "}" ;     Verb = ":" LITERAL ;
//
// `{name}` stays `{name}`; `{name=shelves/*}` becomes `shelves/{name}`, each
// `*` of a variable a parameter of that name and `**` the rest of the path;
// a bare `*` is `{*}`, and the verb stays on the last segment (`{name}:cancel`).
import { parseTemplate } from './route-template.ts';

/** Split at `sep` outside braces. */
export function splitTopLevel(s: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '{') depth++;
    else if (c === '}') depth--;
    else if (c === sep && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

function wildcard(seg: string, name: string): string {
  if (seg === '*') return `{${name}}`;
  if (seg === '**') return `{${name}=**}`;
  return seg;
}

function translateSegment(seg: string): string {
  if (!seg.startsWith('{')) return wildcard(seg, '*');
  if (!seg.endsWith('}')) throw new Error(`segment "${seg}" has text after its variable`);
  const body = seg.slice(1, -1);
  const eq = body.indexOf('=');
  if (eq === -1) return `{${body}}`;
  const name = body.slice(0, eq);
  return body.slice(eq + 1).split('/').map((s) => wildcard(s, name)).join('/');
}

/** The route template of a google.api.http path; throws an Error saying what is wrong with it. */
export function httpRuleTemplate(path: string): string {
  if (!path.startsWith('/')) throw new Error(`path "${path}" must start with "/"`);
  const segments = splitTopLevel(path.slice(1), '/');
  const last = splitTopLevel(segments.pop()!, ':');
  if (last.length > 2) throw new Error(`path "${path}" has more than one verb`);
  const translated = [...segments, last[0]!].map(translateSegment);
  const template = `/${translated.join('/')}${last.length === 2 ? `:${last[1]}` : ''}`;
  try {
    parseTemplate(template);
  } catch (e) {
    throw new Error(`path "${path}": ${(e as Error).message}`, { cause: e });
  }
  return template;
}
