'use strict';
// The deploy files, checked offline: no Docker engine or cluster runs here.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');
const { parseDuration } = require('../lib/start/func-yaml.js');

const DEPLOY = path.join(__dirname, '..', 'examples', 'deploy');

describe('examples/deploy', () => {
  const service = YAML.parse(fs.readFileSync(path.join(DEPLOY, 'service.yaml'), 'utf8'));
  const container = service.spec.template.spec.containers[0];

  it('service.yaml is a Knative Service', () => {
    assert.equal(service.apiVersion, 'serving.knative.dev/v1');
    assert.equal(service.kind, 'Service');
    assert.ok(container.image);
    assert.equal(container.ports[0].containerPort, 8080);
  });

  it("its probe paths are the function's func.yaml health endpoints", () => {
    const funcYaml = YAML.parse(fs.readFileSync(path.join(__dirname, '..', 'examples', service.metadata.name, 'func.yaml'), 'utf8'));
    assert.equal(container.livenessProbe.httpGet.path, funcYaml.deploy.healthEndpoints.liveness);
    assert.equal(container.readinessProbe.httpGet.path, funcYaml.deploy.healthEndpoints.readiness);
  });

  it("funcrun's grace period fits inside the revision's timeout, and the settings are valid for funcrun", () => {
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
    assert.ok(parseDuration(env.FUNC_GRACE_PERIOD, 'FUNC_GRACE_PERIOD') < service.spec.template.spec.timeoutSeconds * 1000);
    assert.ok(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(env.FUNC_LOG_LEVEL));
    assert.ok(service.spec.template.spec.containerConcurrency > 0);
  });

  it('the Dockerfile installs production dependencies, runs as a non-root user, honours PORT and starts through the package binary', () => {
    const dockerfile = fs.readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8');
    const final = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    assert.match(dockerfile, /npm ci --omit=dev/);
    assert.match(final, /^FROM node:\$\{NODE_VERSION\}-alpine$/m);
    assert.match(final, /^USER node$/m);
    assert.match(final, /PORT=8080/);
    // node_modules/.bin/funcrun exists whatever name the package is installed under.
    assert.match(final, /^CMD \["node", "node_modules\/\.bin\/funcrun", "serve", "\."\]$/m);
    assert.match(fs.readFileSync(path.join(DEPLOY, '.dockerignore'), 'utf8'), /^node_modules$/m);
  });
});
