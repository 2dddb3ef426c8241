// Properties of protocol detection: any request head is classified without
// throwing, the framed media types are found whatever their case and parameters,
// and `application/grpc`-like names that are not one of them are never taken for one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { detect } from '../../src/protocol/detect.ts';
import { readCorpus } from '../support/corpus.ts';

const anyText = fc.string({ maxLength: 40 });
const randomCase = (s: string, flips: boolean[]): string => [...s].map((c, i) => (flips[i % Math.max(1, flips.length)] ? c.toUpperCase() : c)).join('');

describe('detect properties', () => {
  it('classifies any head without throwing, the same every time', () => {
    fc.assert(
      fc.property(anyText, fc.option(anyText, { nil: undefined }), fc.option(anyText, { nil: undefined }), anyText, anyText, anyText, (method, contentType, version, query, path, prefix) => {
        const once = detect(method, contentType, version, query, path, prefix);
        assert.deepEqual(detect(method, contentType, version, query, path, prefix), once);
        assert.ok(['grpc', 'grpc_web', 'connect', 'rest', 'trpc'].includes(once.protocol));
      }),
    );
  });

  it('answers each head alike whichever heads came before it (the last framed type is remembered)', () => {
    const type = fc.option(fc.constantFrom('application/grpc', 'application/grpc+json', 'Application/GRPC-Web-Text', 'application/connect+proto', 'application/json', 'application/proto', ''), { nil: undefined });
    const head = fc.tuple(fc.constantFrom('POST', 'GET'), type, fc.option(fc.constant('1'), { nil: undefined }), fc.constantFrom('', 'connect=v1&encoding=json'), fc.constantFrom('/a.B/C', '/trpc/x.y'));
    fc.assert(
      fc.property(fc.array(head, { minLength: 1, maxLength: 12 }), (heads) => {
        // A tRPC call's procedures are a new object each time: compared by their paths.
        const seen = (h: (typeof heads)[number]): object => {
          const d = detect(...h, '/trpc');
          return { ...d, trpc: d.trpc?.procedures.map((p) => p.path) };
        };
        const forward = heads.map(seen);
        const backward = [...heads].reverse().map(seen).reverse();
        assert.deepEqual(forward, backward);
      }),
    );
  });

  it('finds the framed protocols in any case, with any codec and parameters', () => {
    const framed = { 'application/grpc': 'grpc', 'application/grpc-web': 'grpc_web', 'application/grpc-web-text': 'grpc_web', 'application/connect': 'connect' } as const;
    fc.assert(
      fc.property(fc.constantFrom(...(Object.keys(framed) as (keyof typeof framed)[])), fc.option(fc.constantFrom('+proto', '+json', '+thrift'), { nil: '' }), fc.array(fc.boolean(), { minLength: 1 }), fc.option(fc.constantFrom('; charset=utf-8', ';x=y', ' ; a'), { nil: '' }), (base, codec, flips, params) => {
        const d = detect('POST', randomCase(base + codec, flips) + params, undefined, '', '/a.B/C');
        assert.equal(d.protocol, framed[base]);
        assert.equal(d.framed, true);
        assert.equal(d.base64, base === 'application/grpc-web-text');
      }),
    );
  });

  it('never takes a longer name that merely starts like a framed type for it', () => {
    fc.assert(
      fc.property(fc.constantFrom('application/grpc', 'application/grpc-web', 'application/connect'), fc.stringMatching(/^[a-z0-9.-]{1,8}$/), (base, tail) => {
        const media = base + tail;
        fc.pre(!['application/grpc-web', 'application/grpc-web-text'].includes(media));
        assert.equal(detect('POST', media, undefined, '', '/x').framed, false, media);
      }),
    );
  });

  it('replays its corpus', () => {
    for (const { input, why } of readCorpus<{ method: string; contentType: string | null; connectVersion: string | null; query: string; path: string; protocol: string }>('detect')) {
      assert.equal(detect(input.method, input.contentType ?? undefined, input.connectVersion ?? undefined, input.query, input.path).protocol, input.protocol, why);
    }
  });
});
