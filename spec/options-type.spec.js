'use strict';
// start()'s `Options` is written out for the people who read it (lib/index.d.ts, an editor's hover)
// and held to the settings table (src/start/settings.ts): the same options, of the same types, each
// doc comment stating the table's default.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');
const { SETTINGS } = require('../lib/start/settings.js');

const ROOT = path.join(__dirname, '..');
const TSC = require.resolve('typescript/bin/tsc');

/** Options of start() that are not settings: no flag or variable gives them (a folder, a name, a function, a stream). */
const NOT_SETTINGS = ['tempDir', 'config', 'name', 'logDestination', 'command', 'cors'];

const startOptions = Object.keys(SETTINGS).filter((name) => !SETTINGS[name].serveOnly && !SETTINGS[name].variableOnly);

/** The members of `Options` in the built declarations, each with its doc comment. */
function declaredOptions() {
  const file = path.join(ROOT, 'lib', 'index.d.ts');
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const options = source.statements.find((node) => ts.isInterfaceDeclaration(node) && node.name.text === 'Options');
  assert.ok(options, 'lib/index.d.ts declares no interface Options');
  return new Map(
    options.members.map((member) => {
      const docs = ts.getJSDocCommentsAndTags(member).filter(ts.isJSDoc);
      return [member.name.text, docs.map((doc) => ts.getTextOfJSDocComment(doc.comment) ?? '').join(' ')];
    }),
  );
}

/** What a setting's parser reads: sizes, durations, or plain numbers (counts, the port). */
function kindOf(setting) {
  const reads = (text) => {
    try {
      return setting.parse(text, 'probe');
    } catch {
      return undefined;
    }
  };
  if (reads('1kb') === 1024) return 'bytes';
  if (reads('1s') === 1000) return 'duration';
  return 'number';
}

/** Every exact way of writing a number in `units` (`1 MiB`, `1024 KiB`, `1048576`). */
function spelled(value, units) {
  return units.filter(([, size]) => value % size === 0).map(([unit, size]) => `${value / size}${unit}`);
}

/** The ways a doc comment may state the table's default after `Default ` ([] for none: it is decided at start). */
function defaultSpellings(setting) {
  const value = setting.default;
  if (value === undefined) return [];
  if (typeof value !== 'number') return [String(value)];
  switch (kindOf(setting)) {
    case 'bytes':
      return spelled(value, [
        ['', 1],
        [' KiB', 1024],
        [' MiB', 1024 ** 2],
        [' GiB', 1024 ** 3],
      ]);
    case 'duration':
      // 0 is no limit (`off`), or one worked out at start (the idempotency claim's), which words say.
      if (value === 0) return ['off'];
      return spelled(value, [
        ['ms', 1],
        ['s', 1000],
        ['m', 60_000],
        ['h', 3_600_000],
      ]);
    default:
      return [String(value)];
  }
}

const escaped = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

describe("start()'s Options and the settings table", () => {
  it('Options has a member for every option of the table, and no other but those no flag or variable sets', () => {
    const declared = declaredOptions();
    for (const name of startOptions) assert.ok(declared.has(name), `Options has no member ${name}, which the settings table has`);
    for (const name of Object.keys(SETTINGS).filter((n) => SETTINGS[n].serveOnly))
      assert.ok(!declared.has(name), `${name} is serve's own setting, not an option of start()`);
    for (const name of Object.keys(SETTINGS).filter((n) => SETTINGS[n].variableOnly))
      assert.ok(!declared.has(name), `${name} is set by its variable alone, not an option of start()`);
    for (const name of declared.keys()) {
      assert.ok(Object.hasOwn(SETTINGS, name) || NOT_SETTINGS.includes(name), `Options has ${name}, which the settings table lacks`);
    }
    for (const name of NOT_SETTINGS) assert.ok(declared.has(name) && !Object.hasOwn(SETTINGS, name), name);
  });

  it("each member's type is the one the table gives it (its parser's value, and text for a size, a duration or a count), both ways", (t) => {
    const file = path.join(ROOT, '.tmp', 'options-type.ts');
    const header = [
      "import type { Options } from '../lib/index';",
      "import type { OptionTypes } from '../lib/start/settings';",
      'type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;',
    ];
    const lines = startOptions.map((name) => `export const ${name}: Same<Options['${name}'], OptionTypes['${name}'] | undefined> = true;`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, [...header, ...lines, ''].join('\n'));
    t.after(() => fs.rmSync(file, { force: true }));
    const result = spawnSync(
      process.execPath,
      [TSC, '--noEmit', '--strict', '--target', 'ES2022', '--module', 'node16', '--moduleResolution', 'node16', '--skipLibCheck', '--types', 'node', file],
      { cwd: ROOT, encoding: 'utf8' },
    );
    const output = result.stdout + result.stderr;
    const differing = [...output.matchAll(/options-type\.ts\((\d+),\d+\)/g)].map(([, line]) =>
      lines[Number(line) - 1 - header.length]?.split(':')[0].slice('export const '.length),
    );
    assert.deepEqual(differing, [], `Options and the settings table give these options different types:\n${output}`);
    assert.equal(result.status, 0, output);
  });

  it("each member's doc comment states the table's default", () => {
    const declared = declaredOptions();
    for (const name of startOptions) {
      const doc = declared.get(name) ?? '';
      const { default: value } = SETTINGS[name];
      const ways = defaultSpellings(SETTINGS[name]).map((spelling) => ` ${escaped(spelling)}(?=[.;, )]|$)`);
      // No fixed default (undefined, or a duration of 0 that start works out): `Default:` and the words for it.
      if (value === undefined || value === 0) ways.push(':');
      assert.match(doc, new RegExp(`\\bDefault(?:${ways.join('|')})`), `the doc comment of Options.${name} does not state its default (${String(value)})`);
    }
  });
});
