import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MethodGuard, OTHER } from '../../src/route/method-guard.ts';

test('methods past the limit fold into _OTHER; admitted ones keep their label', () => {
  const guard = new MethodGuard(2);
  assert.equal(guard.admit('a.S/A'), 'a.S/A');
  assert.equal(guard.admit('a.S/B'), 'a.S/B');
  assert.equal(guard.admit('a.S/C'), OTHER);
  assert.equal(guard.admit('a.S/A'), 'a.S/A');
  assert.equal(guard.admit('a.S/B'), 'a.S/B');
  assert.equal(guard.admit('a.S/C'), OTHER);
});

test('_OTHER itself takes no room', () => {
  const guard = new MethodGuard(1);
  assert.equal(guard.admit(OTHER), OTHER);
  assert.equal(guard.admit('a.S/A'), 'a.S/A');
});

test('a limit of zero folds everything', () => {
  assert.equal(new MethodGuard(0).admit('a.S/A'), OTHER);
});
