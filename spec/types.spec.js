'use strict';
// The exported types, checked by compiling TypeScript functions against them.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const TSC = require.resolve('typescript/bin/tsc');
const ROOT = path.join(__dirname, '..');

function compile(file) {
  const result = spawnSync(
    process.execPath,
    [TSC, '--noEmit', '--strict', '--target', 'ES2022', '--module', 'node16', '--moduleResolution', 'node16', '--skipLibCheck', '--types', 'node', file],
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

  it('a fetch handler is typed by FetchHandler, FetchEnv and FetchContext, and a handle function may return a Response or a ReadableStream', () => {
    const { code, output } = compile('spec/types/fetch-handler.ts');
    assert.equal(code, 0, output);
  });

  it('uploaded files and streamed bodies are typed, and a module with them compiles', () => {
    const { code, output } = compile('spec/types/uploads.ts');
    assert.equal(code, 0, output);
  });

  it("docs/uploads.md's TypeScript upload function compiles as it is written", (t) => {
    compilesAsWritten(t, fs.readFileSync(path.join(ROOT, 'docs', 'uploads.md'), 'utf8'), 'docs-uploads.ts');
  });

  for (const fixture of ['wrong-function.ts', 'common-mistakes.ts', 'wrong-event-contracts.ts', 'wrong-uploads.ts']) {
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
});
