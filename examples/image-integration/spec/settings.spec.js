'use strict';
// One table of environment variables (lib/settings.ts): the README's Configuration table agrees with
// it both ways (every variable documented with its default and its line, nothing documented that it
// lacks), and index.ts reads the environment only through it.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { SETTINGS, readSettings } = require('../build/lib/settings.js');

const HERE = path.join(__dirname, '..');
const README = fs.readFileSync(path.join(HERE, 'README.md'), 'utf8');

/** The rows of the README's Configuration table (the one headed `| variable | default | meaning |`), each as its cells. */
function configurationRows() {
  const lines = README.split('\n');
  const header = lines.findIndex((line) => line.startsWith('| variable | default | meaning |'));
  assert.ok(header !== -1, 'the README has no Configuration table');
  const end = lines.findIndex((line, i) => i > header && !line.startsWith('|'));
  return lines.slice(header + 2, end === -1 ? undefined : end).map((line) =>
    line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim()),
  );
}

/** The names a variable cell gives in backticks (`HTTPS_PROXY`, `grpc_proxy` (either case)). */
const namesIn = (cell) => [...cell.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)].map((m) => m[1]);

describe('the table of environment variables', () => {
  const rows = configurationRows();
  const rowOf = (setting) => rows.find(([cell]) => namesIn(cell).includes(setting.variables[0]));

  it("the README's Configuration table has a row for every setting: its variables, its default and its line", () => {
    for (const [name, setting] of Object.entries(SETTINGS)) {
      const row = rowOf(setting);
      assert.ok(row, `no row of the README's Configuration table names ${setting.variables[0]} (${name})`);
      const [cell, fallback, meaning] = row;
      const named = namesIn(cell);
      // Each variable by its name; a row may say "(either case)" for the lower-case spellings.
      for (const variable of setting.variables) {
        assert.ok(
          named.some((n) => n.toLowerCase() === variable.toLowerCase()),
          `the README's row for ${name} does not name ${variable}`,
        );
      }
      const expected = setting.default !== undefined ? `\`${setting.default}\`` : setting.unset;
      assert.equal(fallback, expected, `the README's default of ${setting.variables[0]}`);
      assert.equal(meaning, setting.doc, `the README's line for ${setting.variables[0]}`);
    }
  });

  it('the README documents no variable the table lacks, in its Configuration table or anywhere else', () => {
    const known = new Set(Object.values(SETTINGS).flatMap((s) => s.variables));
    for (const [cell] of rows) {
      const named = namesIn(cell);
      assert.ok(named.length > 0, `a row of the Configuration table names no variable: ${cell}`);
      for (const variable of named) assert.ok(known.has(variable), `the README's Configuration table names ${variable}, which no setting reads`);
    }
    for (const [variable] of README.matchAll(/IMAGE_INTEGRATION_[A-Z0-9_]+/g)) {
      assert.ok(known.has(variable), `the README names ${variable}, which no setting reads`);
    }
    const funcYaml = fs.readFileSync(path.join(HERE, 'func.yaml'), 'utf8');
    for (const [, variable] of funcYaml.matchAll(/name: (\S+)/g)) {
      if (variable.startsWith('IMAGE_INTEGRATION_')) assert.ok(known.has(variable), `func.yaml sets ${variable}, which no setting reads`);
    }
  });

  it('each default is written once and parses: with nothing set, the service runs on the documented defaults', () => {
    const settings = readSettings({});
    assert.equal(settings.connectTimeout, 5000);
    assert.equal(settings.responseTimeout, 10_000);
    assert.equal(settings.testTimeout, 30_000);
    assert.equal(settings.maxResponseBytes, 64 * 1024);
    assert.equal(settings.maxRequestBytes, 1024 * 1024);
    assert.equal(settings.maxConcurrentTests, 32);
    assert.equal(settings.allowPrivate, false);
    assert.equal(settings.allowIam, false);
    assert.equal(settings.allowAssumeRole, false);
    for (const name of ['resolveTimeout', 'dnsServers', 'ca', 'apiToken', 'ecrEndpoint', 'stsEndpoint', 'registryEndpoint', 'ownCredentials']) {
      assert.equal(settings[name], undefined, name);
    }
    assert.deepEqual(settings.proxyVariables, []);
  });

  it('an invalid value throws naming its variable; an empty optional value is no value', () => {
    assert.throws(() => readSettings({ IMAGE_INTEGRATION_CONNECT_TIMEOUT: 'soon' }), /IMAGE_INTEGRATION_CONNECT_TIMEOUT/);
    assert.throws(() => readSettings({ IMAGE_INTEGRATION_ALLOW_ECR_IAM: 'maybe' }), /IMAGE_INTEGRATION_ALLOW_ECR_IAM/);
    const empty = readSettings({
      IMAGE_INTEGRATION_API_TOKEN: '',
      IMAGE_INTEGRATION_RESOLVE_TIMEOUT: '',
      IMAGE_INTEGRATION_DNS_SERVERS: '',
      IMAGE_INTEGRATION_CA_FILE: '',
    });
    for (const name of ['apiToken', 'resolveTimeout', 'dnsServers', 'ca']) assert.equal(empty[name], undefined, name);
    const set = readSettings({
      IMAGE_INTEGRATION_DNS_SERVERS: ' 10.0.0.1, 10.0.0.2:53 ,',
      AWS_ACCESS_KEY_ID: 'AKID',
      AWS_SECRET_ACCESS_KEY: 'secret',
      https_proxy: 'http://proxy:3128',
      NO_PROXY: 'x',
    });
    assert.deepEqual(set.dnsServers, ['10.0.0.1', '10.0.0.2:53']);
    assert.deepEqual(set.ownCredentials, { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: undefined });
    assert.deepEqual(set.proxyVariables, ['https_proxy']);
    // One key without the other is no credentials.
    assert.equal(readSettings({ AWS_ACCESS_KEY_ID: 'AKID' }).ownCredentials, undefined);
  });

  it('only index.ts reads the environment, and only through the table', () => {
    const index = fs.readFileSync(path.join(HERE, 'index.ts'), 'utf8');
    assert.equal(index.match(/process\.env/g)?.length, 1, 'index.ts reads process.env once');
    assert.match(index, /readSettings\(process\.env\)/);
    assert.doesNotMatch(index, /IMAGE_INTEGRATION_|AWS_|_PROXY/, 'index.ts names no variable: the table does');
    const sources = (folder) =>
      fs.readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
        const file = path.join(folder, entry.name);
        return entry.isDirectory() ? sources(file) : entry.name.endsWith('.ts') ? [file] : [];
      });
    for (const file of sources(path.join(HERE, 'lib'))) {
      assert.doesNotMatch(fs.readFileSync(file, 'utf8'), /process\.env/, `${path.relative(HERE, file)} reads the environment`);
    }
  });
});
