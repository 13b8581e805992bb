'use strict';
// Module-level mutable state in src/ is the exception, each one listed here with its reason: a
// `let` or `var` added at the top level of a module fails until it is listed (or made part of an
// object its owner creates and hands on), and one listed that is gone fails until it is removed.
// Read from the files' text: a line that starts with `let ` or `var ` (or `export let `, `export
// var `) at column 0 is a module-level declaration; an indented one is inside a function or class.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const SRC = path.join(__dirname, '..', 'src');

const TEMPLATE_TEXT = 'in the text of a file funcrun create writes (a template literal): not module state';

/** `file name`: why the module holds it. */
const ALLOWED = {
  'util/random.ts crypto': 'node:crypto, loaded on first use: a start does not pay for it',
  'xml/xml.ts xmldom': '@xmldom/xmldom, loaded with the first XML body',
  'uploads/multipart.ts busboy': '@fastify/busboy, loaded with the first multipart body',
  'cloudevents/cloudevent.ts sdk': 'the CloudEvents SDK, one per process (instanceof holds in the function), loaded with the first event',
  'lifecycle/deadline.ts clock': "`performance`, read on first use: its first read loads node's perf_hooks",
  'http/connections.ts connectionsKey': "node:http's private symbol for a server's connections, looked up on first use",
  'context.ts contextState': "the reader of a Context's private state, set once by its class's static block: a symbol key would lead the function to it",
  'context.ts executionState': "the reader of a fetch handler's ctx's private state, set once by its class's static block, as contextState",
  'tools/templates/javascript.ts running': TEMPLATE_TEXT,
  'tools/templates/typescript.ts running': TEMPLATE_TEXT,
};

const DECLARATION = /^(?:export )?(?:let|var) +([A-Za-z_$][\w$]*)/;

/** Every module-level `let` and `var` of src/, as `file name` (a name declared twice is listed once). */
function declared() {
  const found = new Set();
  for (const entry of fs.readdirSync(SRC, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.join(entry.parentPath, entry.name);
    const relative = path.relative(SRC, file).split(path.sep).join('/');
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      const match = DECLARATION.exec(line);
      if (match !== null) found.add(`${relative} ${match[1]}`);
    }
  }
  return found;
}

describe('module-level state in src/', () => {
  const found = declared();

  it('every module-level let and var is listed with its reason', () => {
    const unlisted = [...found].filter((entry) => !(entry in ALLOWED));
    assert.deepEqual(
      unlisted,
      [],
      'module-level state not listed in spec/module-state.spec.js: hold it in an object its owner makes, or list it with its reason',
    );
  });

  it('every listed one is still declared', () => {
    const gone = Object.keys(ALLOWED).filter((entry) => !found.has(entry));
    assert.deepEqual(gone, [], 'listed in spec/module-state.spec.js but no longer declared: remove it from the list');
  });

  it('each has a reason', () => {
    for (const [entry, reason] of Object.entries(ALLOWED)) assert.ok(reason.length > 20, `${entry} has no reason`);
  });

  it('the declarations are found in the text (a let at column 0 is one)', () => {
    assert.deepEqual(DECLARATION.exec('let a = 1;')?.[1], 'a');
    assert.deepEqual(DECLARATION.exec('export let $b: number;')?.[1], '$b');
    assert.deepEqual(DECLARATION.exec('var c;')?.[1], 'c');
    assert.equal(DECLARATION.exec('  let indented = 1;'), null);
    assert.equal(DECLARATION.exec('letter = 1;'), null);
  });
});
