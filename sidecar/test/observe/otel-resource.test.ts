import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseResourceAttributes, resourceAttributes } from '../../src/observe/otel-resource.ts';

describe('resourceAttributes', () => {
  it('takes service.name from OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES, else --service-name', () => {
    assert.equal(resourceAttributes('flag', {})['service.name'], 'flag');
    assert.equal(resourceAttributes('flag', { OTEL_RESOURCE_ATTRIBUTES: 'service.name=attrs' })['service.name'], 'attrs');
    assert.equal(resourceAttributes('flag', { OTEL_RESOURCE_ATTRIBUTES: 'service.name=attrs', OTEL_SERVICE_NAME: 'env' })['service.name'], 'env');
  });

  it('adds the pod from the Downward API and the percent-decoded attributes', () => {
    assert.deepEqual(resourceAttributes('rpcscope', { OTEL_RESOURCE_ATTRIBUTES: 'team=checkout%20core,deployment.environment.name=prod', POD_NAME: 'p-1', POD_NAMESPACE: 'shop' }), {
      team: 'checkout core',
      'deployment.environment.name': 'prod',
      'service.name': 'rpcscope',
      'k8s.pod.name': 'p-1',
      'k8s.namespace.name': 'shop',
    });
  });

  it('refuses an entry that is not key=value, naming it', () => {
    assert.throws(() => parseResourceAttributes('a=1,oops'), /OTEL_RESOURCE_ATTRIBUTES: "oops" is not key=value/);
    assert.throws(() => parseResourceAttributes('a=%E0%A4%A'), /not percent-encoded correctly/);
  });
});
