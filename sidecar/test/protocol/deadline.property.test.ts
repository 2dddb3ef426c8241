// Properties of the deadline headers: every value the grammar allows parses to its
// budget, every other value to undefined, and nothing throws.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseConnectTimeoutMs, parseGrpcTimeout } from '../../src/protocol/deadline.ts';
import { readDeadline } from '../../src/protocol/deadline-header.ts';
import { readCorpus } from '../support/corpus.ts';

/** PROTOCOL-HTTP2.md: TimeoutUnit → milliseconds. */
const UNIT_MS = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 } as const;
const GRAMMAR = /^\d{1,8}[HMSmun]$/;

describe('deadline header properties', () => {
  it('parses every grpc-timeout of 1 to 8 digits and a unit to its budget', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^\d{1,8}$/), fc.constantFrom(...(Object.keys(UNIT_MS) as (keyof typeof UNIT_MS)[])), (digits, unit) => {
        assert.equal(parseGrpcTimeout(digits + unit), Number(digits) * UNIT_MS[unit]);
      }),
    );
  });

  it('refuses every other grpc-timeout without throwing', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12, unit: fc.constantFrom(...'0123456789HMSmunhs +-.x ٣'.split('')) }), (value) => {
        const ms = parseGrpcTimeout(value);
        assert.equal(ms === undefined, !GRAMMAR.test(value), value);
      }),
    );
  });

  it('reads connect-timeout-ms of 1 to 10 digits, and nothing else', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12, unit: fc.constantFrom(...'0123456789 -.e'.split('')) }), (value) => {
        assert.equal(parseConnectTimeoutMs(value), /^\d{1,10}$/.test(value) ? Number(value) : undefined);
      }),
    );
  });

  it('reports a repeated grpc-timeout as invalid rather than choosing one', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^\d{1,3}[Sm]$/), { minLength: 2, maxLength: 3 }), (values) => {
        const d = readDeadline('grpc', { 'grpc-timeout': values });
        assert.equal(d?.ms, undefined);
        assert.equal(d?.raw, values.join(','));
      }),
    );
  });

  it('replays its corpus', () => {
    for (const { input, why } of readCorpus<{ value: string; ms: number | null }>('grpc-timeout')) assert.equal(parseGrpcTimeout(input.value) ?? null, input.ms, why);
  });
});
