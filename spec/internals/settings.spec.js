'use strict';
// The table's parsers and precedence, without a server: start() and `funcrun config` read each
// variable the same way, and the probe paths resolve in one order.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { SETTINGS, fromEnvironment, listenPlace } = require('../../lib/start/settings.js');
const { probePaths } = require('../../lib/start/probe-paths.js');
const { parseListenAddress } = require('../../lib/start/func-yaml.js');
const { checkEnv } = require('../../lib/tools/config-command.js');

describe('the settings table: parsers and precedence', () => {
  it('`funcrun config` refuses exactly the values start() refuses, variable by variable', () => {
    const candidates = [
      'banana',
      '-1',
      '0',
      '1',
      '10s',
      '2mb',
      'true',
      'off',
      '/path',
      'faas-js-runtime',
      'debug',
      '70000',
      ' 8080 ',
      '',
      '2147483647',
      '2147483648',
      '99999999999',
    ];
    for (const setting of Object.values(SETTINGS)) {
      for (const variable of setting.env ?? []) {
        for (const value of candidates) {
          let atStart;
          try {
            fromEnvironment({ [variable]: value });
            atStart = 'accepted';
          } catch (err) {
            atStart = err.name;
          }
          let byConfig;
          try {
            checkEnv(variable, value);
            byConfig = 'accepted';
          } catch (err) {
            byConfig = err.name;
          }
          assert.equal(byConfig, atStart, `${variable}=${value}`);
        }
      }
    }
  });

  it('funcrun config takes what func.yaml resolves later: {{ env:NAME }} references and empty values', () => {
    for (const value of ['{{ env:LVL }}', '{{ secret:s:key }}', '']) {
      for (const variable of ['FUNC_LOG_LEVEL', 'FUNC_TIMEOUT', 'PORT', 'LIVENESS_URL', 'FUNC_HEALTH_ROOT_PATH'])
        assert.doesNotThrow(() => checkEnv(variable, value), `${variable}=${value}`);
    }
    // A root path is joined with '/' whichever way it is written, at start and here alike.
    assert.doesNotThrow(() => checkEnv('FUNC_HEALTH_ROOT_PATH', 'q/health'));
    assert.equal(probePaths({ env: { FUNC_HEALTH_ROOT_PATH: 'q/health' }, module: {}, funcYaml: {} }).liveness, '/q/health/liveness');
  });

  it('probe paths follow one precedence: *_URL, then root and relative paths, then the module, then func.yaml, then the default', () => {
    const paths = (env, module = {}, funcYaml = {}) => probePaths({ env, module, funcYaml });
    assert.deepEqual(paths({}), { liveness: '/health/liveness', readiness: '/health/readiness' });
    assert.deepEqual(paths({}, {}, { liveness: '/y/l' }).liveness, '/y/l');
    assert.deepEqual(paths({}, { liveness: '/m/l' }, { liveness: '/y/l' }).liveness, '/m/l');
    assert.deepEqual(paths({ FUNC_HEALTH_ROOT_PATH: '/q/health' }, { liveness: '/m/l' }), { liveness: '/q/health/liveness', readiness: '/q/health/readiness' });
    assert.equal(paths({ FUNC_HEALTH_LIVENESS_PATH: 'alive' }).liveness, '/health/alive');
    assert.equal(paths({ FUNC_HEALTH_LIVENESS_PATH: '/full' }).liveness, '/full');
    assert.equal(paths({ LIVENESS_URL: '/url', FUNC_HEALTH_ROOT_PATH: '/q' }, { liveness: '/m' }).liveness, '/url');
    assert.throws(() => paths({ LIVENESS_URL: 'no-slash' }), /LIVENESS_URL/);
  });

  it('LISTEN_ADDRESS is read as Go reads it: host:port, [IPv6]:port, :port; nothing else', () => {
    assert.deepEqual(parseListenAddress('[::]:8080', 'LISTEN_ADDRESS'), { host: '::', port: 8080 });
    assert.deepEqual(parseListenAddress('127.0.0.1:0', 'LISTEN_ADDRESS'), { host: '127.0.0.1', port: 0 });
    assert.deepEqual(parseListenAddress('[fe80::1%eth0]:80', 'LISTEN_ADDRESS'), { host: 'fe80::1%eth0', port: 80 });
    assert.deepEqual(parseListenAddress('localhost:3000', 'LISTEN_ADDRESS'), { host: 'localhost', port: 3000 });
    assert.deepEqual(parseListenAddress(':9000', 'LISTEN_ADDRESS'), { port: 9000 });
    for (const bad of ['8080', ':', '[::]', '[::]:', '::1:80', '[]:80', '[::1]x:80', 'host:port', 'a/b:80', ':-1', ':65536', ':8080 8081']) {
      assert.throws(
        () => parseListenAddress(bad, 'LISTEN_ADDRESS'),
        (err) => err.name === 'ConfigError' && err.message.startsWith('invalid LISTEN_ADDRESS '),
        bad,
      );
    }
  });

  it('where to listen: the option, then LISTEN_ADDRESS, then PORT / FUNC_PORT and FUNC_HOST, each part on its own; :: is no host', () => {
    const env = (vars) => fromEnvironment(vars);
    // Where to listen; where each part came from is checked below.
    const place = (options, values) => {
      const { port, host } = listenPlace(options, values);
      return { port, host };
    };
    assert.deepEqual(place({}, env({})), { port: 8080, host: undefined });
    assert.deepEqual(place({}, env({ LISTEN_ADDRESS: '[::]:8080' })), { port: 8080, host: undefined });
    assert.deepEqual(place({}, env({ LISTEN_ADDRESS: '127.0.0.1:7000', PORT: '9000', FUNC_HOST: '::1' })), { port: 7000, host: '127.0.0.1' });
    assert.deepEqual(place({}, env({ LISTEN_ADDRESS: ':7000', PORT: '9000', FUNC_HOST: '::1' })), { port: 7000, host: '::1' });
    assert.deepEqual(place({ port: 5000 }, env({ LISTEN_ADDRESS: '127.0.0.1:7000' })), { port: 5000, host: '127.0.0.1' });
    assert.deepEqual(place({ host: '::' }, env({ LISTEN_ADDRESS: '127.0.0.1:7000' })), { port: 7000, host: undefined });
    assert.deepEqual(place({}, env({ PORT: '9000', FUNC_PORT: '9001', FUNC_HOST: '::' })), { port: 9000, host: undefined });
    // Each part's source, for a start error: the flag, LISTEN_ADDRESS, or the variable that was set.
    const sources = (options, vars) => {
      const { portFrom, hostFrom } = listenPlace(options, env(vars), vars);
      return { portFrom, hostFrom };
    };
    assert.deepEqual(sources({}, {}), { portFrom: undefined, hostFrom: undefined });
    assert.deepEqual(sources({}, { LISTEN_ADDRESS: ':7000', FUNC_HOST: '::1' }), { portFrom: 'LISTEN_ADDRESS', hostFrom: 'FUNC_HOST' });
    assert.deepEqual(sources({ host: '::1' }, { LISTEN_ADDRESS: '127.0.0.1:7000' }), { portFrom: 'LISTEN_ADDRESS', hostFrom: '--host' });
    assert.deepEqual(sources({ port: 5000 }, { FUNC_PORT: '9001' }), { portFrom: '--port', hostFrom: undefined });
    assert.deepEqual(sources({}, { FUNC_PORT: '9001' }), { portFrom: 'FUNC_PORT', hostFrom: undefined });
  });
});
