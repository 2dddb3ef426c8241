// Properties of route templating: a path built from a template by filling its
// parameters matches that template's route, a path with a segment too many or too
// few does not, literal segments win over parameters, and any text given as a
// template is either parsed or refused with an Error that says why.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { RouteTable, parseTemplate } from '../../src/route/route-template.ts';
import { readCorpus } from '../support/corpus.ts';

const word = fc.stringMatching(/^[a-z0-9_.-]{1,8}$/);
/** A value a client may put where a parameter is: anything but "/" and empty. */
const value = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes('/'));
type Part = { literal: string } | { param: string };
const template = fc.array(fc.oneof(word.map((literal) => ({ literal })), word.map((param) => ({ param }))), { minLength: 1, maxLength: 6 });
const render = (parts: Part[]): string => '/' + parts.map((p) => ('literal' in p ? p.literal : `{${p.param}}`)).join('/');

describe('route template properties', () => {
  it('matches every path that fills the template, and none with a segment more or less', () => {
    fc.assert(
      fc.property(template, fc.array(value, { minLength: 6, maxLength: 6 }), value, (parts, values, extra) => {
        const t = render(parts);
        const table = new RouteTable();
        table.add({ httpMethod: 'GET', template: t });
        const path = '/' + parts.map((p, i) => ('literal' in p ? p.literal : values[i]!)).join('/');
        assert.equal(table.match('GET', path), `GET ${t}`, path);
        assert.equal(table.match('POST', path), undefined);
        assert.equal(table.match('GET', `${path}/${extra}`), undefined);
        if (parts.length > 1) assert.equal(table.match('GET', path.slice(0, path.lastIndexOf('/'))), undefined);
      }),
    );
  });

  it('prefers a literal segment to a parameter in the same place', () => {
    fc.assert(
      fc.property(word, word, word, (head, lit, tail) => {
        const table = new RouteTable();
        table.add({ httpMethod: 'GET', template: `/${head}/{id}/${tail}` });
        table.add({ httpMethod: 'GET', template: `/${head}/${lit}/${tail}` });
        assert.equal(table.match('GET', `/${head}/${lit}/${tail}`), `GET /${head}/${lit}/${tail}`);
      }),
    );
  });

  it('parses or refuses any text with an Error, never another exception', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30, unit: fc.constantFrom(...'/{}=*:.ab '.split('')) }), (text) => {
        try {
          parseTemplate(text);
        } catch (err) {
          assert.equal((err as Error).constructor, Error, String(err));
        }
      }),
    );
  });

  it('replays its corpus', () => {
    for (const { input, why } of readCorpus<{ template: string; path: string; matches: boolean }>('route-template')) {
      const table = new RouteTable();
      table.add({ httpMethod: 'GET', template: input.template });
      assert.equal(table.match('GET', input.path) !== undefined, input.matches, why);
    }
  });
});
