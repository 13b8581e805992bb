'use strict';
// bench/README.md is written by `npm run bench -- --markdown` (bench/readme.js), never by hand:
// a page that lost the generator's sections, or its run's tables, was edited or cut.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { HEADINGS, SUMMARY_START, SUMMARY_END } = require('../bench/readme.js');

const page = fs.readFileSync(path.join(__dirname, '..', 'bench', 'README.md'), 'utf8');
const guide = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');

/** The rows of the markdown tables in `text`, each as its cells. */
const rows = (text) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('|---'))
    .map((line) => line.slice(2, -2).split(' | '));

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
    // After a full garbage collection (a page written before bench/settle.js: as the load left it).
    assert.match(run, /^\| RSS after the load above(, garbage collected)? \|/m);
  });

  it("is summed up in the README, by the same run: each workload's throughput and ratio, the cold start and RSS", () => {
    const summary = guide.slice(guide.indexOf(SUMMARY_START) + SUMMARY_START.length, guide.indexOf(SUMMARY_END));
    assert.ok(guide.includes(SUMMARY_START) && guide.indexOf(SUMMARY_END) > guide.indexOf(SUMMARY_START), 'the summary markers');
    const run = page.slice(page.indexOf(`## ${HEADINGS.at(-1)}`));
    assert.equal(/^Measured .*$/m.exec(summary)?.[0], /^Measured .*$/m.exec(run)?.[0], 'the same run');
    // The throughput table comes first; the instructions table after it repeats some labels.
    const full = new Map();
    for (const cells of rows(run)) {
      const key = cells[0].startsWith('cold start') ? 'cold start' : cells[0];
      if (!full.has(key)) full.set(key, cells);
    }
    const summed = rows(summary).slice(1);
    assert.ok(summed.length >= 4, 'a row per workload, cold start and RSS');
    for (const [label, raw, funcrun, ratio] of summed) {
      const key = label.startsWith('cold start') ? 'cold start' : label;
      const cells = full.get(key);
      assert.ok(cells, `${label}: in bench/README.md`);
      assert.deepEqual([cells[1], cells[2]], [raw, funcrun], label);
      // The full table adds the rounds' range to a ratio: `**0.61** (0.60–0.65)`.
      assert.equal(cells[3].replace(/\*\*/g, '').replace(/ \(.*\)$/, ''), ratio, label);
    }
  });
});
