// The per-connection budget of streams reset before their answer: a burst of 200,
// then 33 a second.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResetBudget } from '../../src/h2/reset-budget.ts';

function spendUntilRefused(budget: ResetBudget, max: number): number {
  for (let i = 0; i < max; i++) if (!budget.spend()) return i;
  return max;
}

describe('ResetBudget', () => {
  it('allows a burst of 200 resets at once, then refuses', () => {
    const budget = new ResetBudget(() => 0);
    assert.equal(spendUntilRefused(budget, 1000), 200);
    assert.equal(budget.spend(), false);
  });

  it('refills 33 a second, up to the burst', () => {
    let t = 0;
    const budget = new ResetBudget(() => t);
    spendUntilRefused(budget, 1000);
    t = 1000;
    assert.equal(spendUntilRefused(budget, 1000), 33);
    t = 1_000_000;
    assert.equal(spendUntilRefused(budget, 1000), 200);
  });

  it('never refuses a client that cancels at a steady 30 a second', () => {
    let t = 0;
    const budget = new ResetBudget(() => t);
    for (let i = 0; i < 30 * 600; i++) {
      t = (i * 1000) / 30;
      assert.ok(budget.spend(), `refused at ${t} ms`);
    }
  });
});
