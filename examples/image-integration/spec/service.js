'use strict';
// Starts the image integration service in this process, on 127.0.0.1 port 0, with a log sink.
const { serve, request } = require('./helpers');
const { createService, PATH } = require('../build/lib/service.js');

const defaults = {
  limits: { connectTimeout: 2000, responseTimeout: 2000, maxBodyBytes: 64 * 1024, allowPrivate: true },
  testTimeout: 10_000,
  aws: {},
};

async function startService(options = {}) {
  const merged = { ...defaults, ...options, limits: { ...defaults.limits, ...options.limits }, aws: { ...defaults.aws, ...options.aws } };
  const server = await serve(createService(merged));
  /** POSTs an integration (an object, or text sent as it is) and returns the answer. */
  const test = (integration, headers = {}) =>
    request(server.url + PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof integration === 'string' ? integration : JSON.stringify(integration),
    });
  return { ...server, test };
}

/** Asserts that none of `secrets` appears in the answer or in any log line. */
function assertNoSecret(assert, answer, log, secrets) {
  for (const secret of secrets) {
    assert.ok(!answer.text.includes(secret), `the answer holds a secret: ${answer.text}`);
    assert.ok(!log.text().includes(secret), `the log holds a secret: ${log.text()}`);
  }
}

module.exports = { startService, assertNoSecret };
