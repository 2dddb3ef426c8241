import assert from 'node:assert/strict';
import { test } from 'node:test';
import { labelText, sampleLine, targetInfo } from '../../src/observe/prometheus-text.ts';

test('label names are sanitised and values escaped as the text format requires', () => {
  assert.equal(labelText({ 'k8s.pod.name': 'p', 'a..b': 'x' }), 'k8s_pod_name="p",a_b="x"');
  assert.equal(labelText({ v: 'say "hi"\\\n' }), 'v="say \\"hi\\"\\\\\\n"');
  assert.equal(labelText({ n: 3, b: true }), 'n="3",b="true"');
  assert.equal(labelText({}), '');
});

test('sample values: infinities as +Inf and -Inf, numbers as JavaScript prints them', () => {
  assert.equal(sampleLine('x', '', Infinity), 'x +Inf\n');
  assert.equal(sampleLine('x', 'a="1"', -Infinity), 'x{a="1"} -Inf\n');
  assert.equal(sampleLine('x', '', 1e-7), 'x 1e-7\n');
});

test('target_info carries the resource attributes', () => {
  assert.equal(targetInfo({ 'service.name': 'rpcscope' }), '# HELP target_info Target metadata\n# TYPE target_info gauge\ntarget_info{service_name="rpcscope"} 1\n');
});
