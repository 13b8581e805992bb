'use strict';
// CONTRIBUTING.md's map of the code names every module of src/, in its folder, and nothing else:
// a module added, moved or removed without the map changing fails here.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');

/** The paths the map's `src/` tree names, folders ending in `/`, from its indentation. */
function mapped() {
  const text = fs.readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8');
  const section = text.slice(text.indexOf('## The code\n'));
  const block = section.slice(section.indexOf('```\n') + 4, section.indexOf('\n```', section.indexOf('```\n') + 4));
  const lines = block.split('\n');
  assert.equal(lines[0], 'src/', 'the map starts with src/');
  const names = [];
  const folders = [''];
  for (const line of lines.slice(1)) {
    const indent = line.length - line.trimStart().length;
    if (indent === 0) break;
    const name = line.trim().split(/\s+/)[0];
    const depth = indent / 2;
    assert.ok(Number.isInteger(depth) && depth <= folders.length, `line '${line}' is not indented by two spaces a level`);
    folders.length = depth;
    const full = folders.join('') + name;
    names.push(full);
    if (name.endsWith('/')) folders.push(name);
  }
  return names;
}

function sources() {
  const names = [];
  for (const entry of fs.readdirSync(path.join(ROOT, 'src'), { recursive: true, withFileTypes: true })) {
    const relative = path.relative(path.join(ROOT, 'src'), path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (entry.isDirectory()) names.push(`${relative}/`);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) names.push(relative);
  }
  return names;
}

describe("CONTRIBUTING.md's map of the code", () => {
  it('names every module and folder of src/, where it is, and nothing that is not there', () => {
    assert.deepEqual(mapped().sort(), sources().sort());
  });

  it('says what each module is for', () => {
    const text = fs.readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8');
    const section = text.slice(text.indexOf('## The code\n'));
    const block = section.slice(section.indexOf('```\n') + 4, section.indexOf('\n```', section.indexOf('```\n') + 4));
    for (const line of block.split('\n').slice(1)) {
      if (!line.startsWith(' ')) break;
      assert.match(line.trim(), /^\S+\s+\S/, `'${line.trim()}' has no description`);
    }
  });
});
