'use strict';
// The exported types, checked by compiling TypeScript functions against them.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const TSC = require.resolve('typescript/bin/tsc');
const ROOT = path.join(__dirname, '..');

function compile(file, flags = []) {
  const result = spawnSync(
    process.execPath,
    [
      TSC,
      '--noEmit',
      '--strict',
      '--target',
      'ES2022',
      '--module',
      'node16',
      '--moduleResolution',
      'node16',
      '--skipLibCheck',
      '--types',
      'node',
      ...flags,
      file,
    ],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  );
  return { code: result.status, output: result.stdout + result.stderr };
}

/**
 * The errors tsc reports in a fixture, by line, beside the lines marked `// error` (optionally
 * `// error TSnnnn`, the code that line must fail with).
 */
function errorsOf(fixture) {
  const { code, output } = compile(`spec/types/${fixture}`);
  const reported = new Map();
  for (const [, line, tsCode] of output.matchAll(new RegExp(`${fixture.replace('.', '\\.')}\\((\\d+),\\d+\\): error (TS\\d+)`, 'g'))) {
    reported.set(Number(line), [...(reported.get(Number(line)) ?? []), tsCode]);
  }
  const marked = new Map();
  fs.readFileSync(path.join(__dirname, 'types', fixture), 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const mark = /\/\/ error( TS\d+)?/.exec(text);
      if (mark) marked.set(i + 1, mark[1]?.trim());
    });
  return { code, output, reported, marked };
}

/** The first TypeScript example in `text` compiles, written beside the fixtures so 'funcrun' and 'zod' resolve as in a function project. */
function compilesAsWritten(t, text, name) {
  const example = /```ts\n([\s\S]*?)```/.exec(text);
  assert.ok(example, 'the text has a TypeScript example');
  const file = path.join(ROOT, '.tmp', name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, example[1]);
  t.after(() => fs.rmSync(file, { force: true }));
  const { code, output } = compile(path.relative(ROOT, file));
  assert.equal(code, 0, output);
}

describe('exported types', () => {
  // The fixtures import 'funcrun' by name, which resolves to this package (its "exports" field)
  // and its built declarations: what a function project gets.
  it('a typed TypeScript function compiles against them', () => {
    const { code, output } = compile('spec/types/typed-function.ts');
    assert.equal(code, 0, output);
  });

  it("what a handler may return, typed event functions and the Knative templates' handlers compile against them", () => {
    const { code, output } = compile('spec/types/correct-forms.ts');
    assert.equal(code, 0, output);
  });

  it('event contracts type each event by its declared type, from a JSON Schema or a Standard Schema, and a module with them compiles', () => {
    const { code, output } = compile('spec/types/event-contracts.ts');
    assert.equal(code, 0, output);
  });

  it("docs/cloudevents.md's TypeScript example of event contracts compiles as it is written", (t) => {
    const page = fs.readFileSync(path.join(ROOT, 'docs', 'cloudevents.md'), 'utf8');
    compilesAsWritten(t, page.slice(page.indexOf('## Event contracts'), page.indexOf('## Duplicates run once')), 'docs-event-contracts.ts');
  });

  it("docs/testing.md's handler of event contracts and its unit test compile as written, and the test passes", (t) => {
    const page = fs.readFileSync(path.join(ROOT, 'docs', 'testing.md'), 'utf8');
    const section = page.slice(page.indexOf('## createEventContext'), page.indexOf('## serve'));
    const blocks = [...section.matchAll(/```ts\n\/\/ (\S+)\n([\s\S]*?)```/g)];
    assert.deepEqual(
      blocks.map(([, file]) => file),
      ['src/index.ts', 'test/unit.ts'],
    );
    const project = path.join(ROOT, '.tmp', 'docs-event-test');
    t.after(() => fs.rmSync(project, { recursive: true, force: true }));
    for (const [, file, text] of blocks) {
      fs.mkdirSync(path.dirname(path.join(project, file)), { recursive: true });
      fs.writeFileSync(path.join(project, file), text);
    }
    const test = path.relative(ROOT, path.join(project, 'test', 'unit.ts'));
    // As a project made by `funcrun create` compiles it: its tests import the source by its .ts name.
    const { code, output } = compile(test, ['--allowImportingTsExtensions']);
    assert.equal(code, 0, output);
    if (!process.features.typescript) return;
    // Without this run's NODE_TEST_CONTEXT, which would send the inner run's report to this one.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const run = spawnSync(process.execPath, ['--test', '--test-reporter=tap', test], { cwd: ROOT, encoding: 'utf8', env });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /^# pass 1$/m);
  });

  it('a fetch handler is typed by FetchHandler, FetchEnv and FetchContext and may throw retry() or drop(), and a handle function may return a Response or a ReadableStream', () => {
    const { code, output } = compile('spec/types/fetch-handler.ts');
    assert.equal(code, 0, output);
  });

  it("a fetch handler's CloudEvents helpers are typed with the WHATWG Request and Response and the SDK's CloudEvent, and a use of them compiles", () => {
    const { code, output } = compile('spec/types/web-events.ts');
    assert.equal(code, 0, output);
  });

  it("docs/cloudevents.md's TypeScript fetch handler reading and answering events compiles as it is written", (t) => {
    const page = fs.readFileSync(path.join(ROOT, 'docs', 'cloudevents.md'), 'utf8');
    compilesAsWritten(t, page.slice(page.indexOf('## CloudEvents in a fetch handler'), page.indexOf('## Event contracts')), 'docs-web-events.ts');
  });

  it('uploaded files and streamed bodies are typed, and a module with them compiles', () => {
    const { code, output } = compile('spec/types/uploads.ts');
    assert.equal(code, 0, output);
  });

  it("docs/uploads.md's TypeScript upload function compiles as it is written", (t) => {
    compilesAsWritten(t, fs.readFileSync(path.join(ROOT, 'docs', 'uploads.md'), 'utf8'), 'docs-uploads.ts');
  });

  for (const fixture of [
    'wrong-function.ts',
    'common-mistakes.ts',
    'wrong-event-contracts.ts',
    'wrong-uploads.ts',
    'wrong-structured-returns.ts',
    'wrong-web-events.ts',
  ]) {
    it(`each mistake in ${fixture} is one error on its own line, with the code it is marked with`, () => {
      const { code, output, reported, marked } = errorsOf(fixture);
      assert.notEqual(code, 0);
      assert.ok(marked.size > 0);
      const inFixture = [...reported.values()].flat().length;
      assert.equal(output.match(/: error TS\d+/g).length, inFixture, `errors outside ${fixture}:\n${output}`);
      for (const line of reported.keys()) assert.ok(marked.has(line), `line ${line} is not marked but fails:\n${output}`);
      for (const [line, expected] of marked) {
        assert.equal(reported.get(line)?.length, 1, `line ${line} should fail once:\n${output}`);
        if (expected !== undefined) assert.equal(reported.get(line)[0], expected, `line ${line}:\n${output}`);
      }
    });
  }

  it("a structured return's unknown key is refused by an error that names it: at the key, or as the property that does not fit", () => {
    const fixture = 'wrong-structured-returns.ts';
    const { output } = compile(`spec/types/${fixture}`);
    const source = fs.readFileSync(path.join(__dirname, 'types', fixture), 'utf8').split('\n');
    // Each error with the lines that elaborate it, by the line it is reported at.
    const blocks = new Map();
    for (const block of output.split(/\n(?=\S)/)) {
      const at = new RegExp(`${fixture.replace('.', '\\.')}\\((\\d+),(\\d+)\\)`).exec(block);
      if (at) blocks.set(Number(at[1]), { column: Number(at[2]), text: block });
    }
    const keyed = source.map((text, i) => [i + 1, /\/\/ error TS\d+ '([^']+)'/.exec(text)?.[1]]).filter(([, key]) => key !== undefined);
    assert.ok(keyed.length >= 10);
    for (const [line, key] of keyed) {
      const error = blocks.get(line);
      assert.ok(error, `line ${line} compiles:\n${output}`);
      const atKey = source[line - 1]
        .slice(error.column - 1)
        .replace(/^'/, '')
        .startsWith(key);
      assert.ok(
        atKey || error.text.includes(`roperty '${key}'`) || error.text.includes(`roperty ''${key}''`),
        `line ${line}'s error does not name '${key}':\n${error.text}`,
      );
    }
  });
});
