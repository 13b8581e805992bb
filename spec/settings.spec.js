'use strict';
// One table of settings (src/start/settings.ts): start(), serve's flags and --help, `funcrun config`,
// and the options table of docs/options.md all agree with it.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { SETTINGS } = require('../lib/start/settings.js');
const { start, stop, defaults } = require('../lib/index.js');

const ROOT = path.join(__dirname, '..');
const OPTIONS_PAGE = fs.readFileSync(path.join(ROOT, 'docs', 'options.md'), 'utf8');

/** The options table of docs/options.md (the one headed `| flag | variable |`): each row's cells. */
function optionRows() {
  const lines = OPTIONS_PAGE.split('\n');
  const header = lines.findIndex((line) => line.startsWith('| flag | variable |'));
  assert.ok(header !== -1, 'docs/options.md has no options table');
  const end = lines.findIndex((line, i) => i > header && !line.startsWith('|'));
  return lines.slice(header + 2, end === -1 ? undefined : end).map((line) =>
    line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim()),
  );
}

describe('the settings table', () => {
  it("the options table of docs/options.md states each setting's default as the table has it", () => {
    // A default the page writes as a value (`1 MiB`, `20s`, `off`, `8080`), read back.
    const UNITS = { KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
    const valuesOf = (cell) => {
      const text = cell.replace(/`/g, '').trim();
      if (text === 'off') return [false, 0];
      if (text === 'true') return [true];
      const unit = /^(\d+) ?(KiB|MiB|GiB|ms|s|m|h)$/.exec(text);
      if (unit) return [Number(unit[1]) * UNITS[unit[2]]];
      return /^\d+$/.test(text) ? [Number(text)] : [text];
    };
    let checked = 0;
    for (const cells of optionRows()) {
      const name = /`(\w+)`/.exec(cells[2])?.[1];
      const setting = SETTINGS[name];
      // Defaults that depend on another setting or the mode are prose: `uploadLimit`, `by name`.
      if (setting === undefined || setting.default === undefined || /\(|,| /.test(cells[3].replace(/^\d+ (KiB|MiB|GiB)$/, ''))) continue;
      assert.ok(valuesOf(cells[3]).includes(setting.default), `docs/options.md gives ${name} the default ${cells[3]}; the table has ${setting.default}`);
      checked++;
    }
    assert.ok(checked >= 20, `only ${checked} defaults checked`);
  });

  it('the options table of docs/options.md has a row for every setting, with its flags, variables and option', () => {
    const rows = optionRows();
    for (const [name, setting] of Object.entries(SETTINGS)) {
      const row = rows.find((cells) => (setting.env ?? []).every((v) => cells[1].includes(`\`${v}\``)) && (setting.env?.length ?? 0) > 0);
      assert.ok(row, `no row of docs/options.md names the variables of ${name}: ${setting.env}`);
      for (const flag of setting.flags ?? []) assert.ok(row[0].includes(`\`${flag}\``), `the docs/options.md row for ${name} lacks the flag ${flag}`);
      if (!setting.serveOnly && !setting.variableOnly)
        assert.ok(row[2].includes(`\`${name}\``), `the docs/options.md row for ${name} lacks the start() option`);
      if (setting.variableOnly) assert.equal(row[2], '', `${name} is set by its variable alone: the docs/options.md row names no start() option`);
    }
    // And nothing in the table that the table of settings does not know (probe and label variables aside).
    const known = new Set(Object.values(SETTINGS).flatMap((s) => s.env ?? []));
    for (const cells of rows) {
      for (const [, variable] of cells[1].matchAll(/`(FUNC_[A-Z_]+)`/g)) {
        if (!/^FUNC_HEALTH_/.test(variable)) assert.ok(known.has(variable), `docs/options.md names ${variable}, which no setting reads`);
      }
    }
  });

  it('--help lists every flag of the table', () => {
    const help = spawnSync(process.execPath, [path.join(ROOT, 'lib', 'serve.js'), '--help'], { encoding: 'utf8' });
    assert.equal(help.status, 0);
    for (const setting of Object.values(SETTINGS)) for (const flag of setting.flags ?? []) assert.match(help.stdout, new RegExp(`${flag}\\b`), flag);
  });

  it('funcrun config envs add refuses FUNC_TIMEOUT=banana, which the server would refuse at start', () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-settings-'));
    fs.writeFileSync(path.join(folder, 'func.yaml'), 'name: s\n');
    for (const variable of ['FUNC_TIMEOUT', 'FUNC_METRICS', 'FUNC_MAX_EVENT_LOOP_DELAY', 'FUNC_COMPAT', 'FUNC_UPLOAD_DISK_LIMIT', 'FUNC_MIN_BODY_RATE']) {
      const res = spawnSync(
        process.execPath,
        [path.join(ROOT, 'lib', 'tools', 'cli.js'), 'config', 'envs', 'add', '--path', folder, '--name', variable, '--value', 'banana'],
        { encoding: 'utf8' },
      );
      assert.notEqual(res.status, 0, variable);
      assert.match(res.stderr + res.stdout, new RegExp(`invalid ${variable} 'banana'`), variable);
    }
    assert.equal(fs.readFileSync(path.join(folder, 'func.yaml'), 'utf8'), 'name: s\n');
  });

  it('a request timeout shorter than the headers timeout starts (the headers are due by then), and a timer past 2^31 ms is refused', async (t) => {
    const server = await start(() => 'ok', { port: 0, host: '127.0.0.1', logLevel: 'silent', requestTimeout: '5s' });
    t.after(() => stop(server, 100));
    assert.equal(server.headersTimeout, 5000);
    assert.equal(server.requestTimeout, 5000);
    await assert.rejects(
      start(() => 'ok', { port: 0, host: '127.0.0.1', timeout: 2 ** 31 }),
      /at most 2147483647 ms/,
    );
  });

  it('a wrong command line is one line on stderr and exit code 2; --help lines keep a space before their text', () => {
    const bad = spawnSync(process.execPath, [path.join(ROOT, 'lib', 'serve.js'), '--bogus'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.equal(bad.stderr.trim().split('\n').length, 1);
    assert.match(JSON.parse(bad.stderr).msg, /unknown option '--bogus'/);
    const help = spawnSync(process.execPath, [path.join(ROOT, 'lib', 'serve.js'), '--help'], { encoding: 'utf8' }).stdout;
    for (const line of help.split('\n').filter((l) => /^\s+(-\w, )?--/.test(l))) assert.match(line, /^\s+\S.*\S \S/, line);
    assert.match(help, /--max-connections <value> open connections/);
  });

  it('start() takes each option as text or as a value, checked by the same parser', async () => {
    const server = await start(() => 'ok', {
      port: '0',
      host: '127.0.0.1',
      logLevel: 'silent',
      timeout: '2s',
      bodyLimit: '1kb',
      maxConnections: '5',
      includeRaw: 'yes',
    });
    await stop(server, 100);
    await assert.rejects(
      start(() => 'ok', { port: 0, host: '127.0.0.1', timeout: 'banana' }),
      /invalid timeout 'banana'/,
    );
    assert.equal(defaults.timeout, SETTINGS.timeout.default);
  });
});
