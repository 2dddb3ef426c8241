// The per-connection budgets of PING and SETTINGS frames: a burst, then a steady rate.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONTROL_FRAME_BUDGETS, ControlFrameBudget } from '../../src/h2/control-frame-budget.ts';

function spendUntilRefused(budget: ControlFrameBudget, max: number): number {
  for (let i = 0; i < max; i++) if (!budget.spend()) return i;
  return max;
}

describe('ControlFrameBudget', () => {
  for (const [frame, limit] of Object.entries(CONTROL_FRAME_BUDGETS)) {
    it(`${frame}: allows a burst of ${limit.burst}, then ${limit.perSecond} a second`, () => {
      let t = 0;
      const budget = new ControlFrameBudget(limit, () => t);
      assert.equal(spendUntilRefused(budget, 10_000), limit.burst);
      t = 1000;
      assert.equal(spendUntilRefused(budget, 10_000), limit.perSecond);
      t = 1_000_000;
      assert.equal(spendUntilRefused(budget, 10_000), limit.burst);
    });

    it(`${frame}: stays under nghttp2's 1000 queued ACKs, and never refuses a client at its steady rate`, () => {
      assert.ok(limit.burst < 1000);
      let t = 0;
      const budget = new ControlFrameBudget(limit, () => t);
      for (let i = 0; i < limit.perSecond * 600; i++) {
        t = (i * 1000) / limit.perSecond;
        assert.ok(budget.spend(), `refused at ${t} ms`);
      }
    });
  }
});
