'use strict';
// The words the docs and the code use for what funcrun implements: the function contract (and its
// Java variant), named as such wherever a reader meets it.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
// Built from parts so that this file does not match itself. A seeded random generator's `seed` is another matter.
const INTERNAL_NAME = new RegExp(`\\bthe ${'se'}ed\\b|\\b${'se'}ed's\\b`, 'i');

/** The docs, the examples and the sources: every .md, .ts and .js file outside node_modules and build output. */
function readable(folder, found = []) {
  for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules' || entry.name === 'build') continue;
    const file = path.join(folder, entry.name);
    if (entry.isDirectory()) readable(file, found);
    else if (/\.(md|ts|js)$/.test(entry.name) && !isGenerated(file)) found.push(file);
  }
  return found;
}

// lib/ is built from src/; spec/peers holds other projects' files.
function isGenerated(file) {
  const relative = path.relative(ROOT, file);
  return /^lib[\\/]/.test(relative) || /^spec[\\/]peers[\\/]/.test(relative);
}

describe('wording', () => {
  it('the docs and the code name the function contract, never by an internal name', () => {
    const offending = [];
    for (const file of [
      path.join(ROOT, 'README.md'),
      path.join(ROOT, 'CONTRIBUTING.md'),
      ...['src', 'spec', 'examples', 'bench', 'docs'].flatMap((f) => (fs.existsSync(path.join(ROOT, f)) ? readable(path.join(ROOT, f)) : [])),
    ]) {
      const lines = fs.readFileSync(file, 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (INTERNAL_NAME.test(line)) offending.push(`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
      });
    }
    assert.deepEqual(offending, []);
  });
});
