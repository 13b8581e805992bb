'use strict';
// bench/README.md is written by `npm run bench -- --markdown` (bench/readme.js), never by hand:
// a page that lost the generator's sections, or its run's tables, was edited or cut.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { HEADINGS } = require('../bench/readme.js');

const page = fs.readFileSync(path.join(__dirname, '..', 'bench', 'README.md'), 'utf8');

describe('bench/README.md', () => {
  it("has the generator's sections, in its order, and no others", () => {
    const headings = page
      .split('\n')
      .filter((line) => line.startsWith('## '))
      .map((line) => line.slice(3));
    assert.deepEqual(headings, HEADINGS);
  });

  it('says it is generated, and by what', () => {
    assert.match(page, /^# Benchmarks\n\nWritten by `npm run bench -- --markdown`/);
  });

  it("ends with a run's tables: the machine and Node version, the throughput, cold start and RSS", () => {
    const run = page.slice(page.indexOf(`## ${HEADINGS.at(-1)}`));
    assert.match(run, /^Measured \d{4}-\d{2}-\d{2} on .+, \d+ cores, Node\.js v\d+\.\d+\.\d+/m);
    assert.match(run, /^\| workload \| raw node:http req\/s \| funcrun req\/s \|/m);
    assert.match(run, /^\| cold start, /m);
    assert.match(run, /^\| RSS after the load above \|/m);
  });
});
