'use strict';
// The docs hold together: README.md is a short guide whose Documentation list leads to every
// reference page in docs/, and every relative link and #anchor in the docs leads somewhere real.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const README_MAX_LINES = 330;
// Written by `npm run bench -- --markdown`, not by hand. Until a run is committed, links to it
// dangle: that is reported as a todo below, not as a broken link.
const GENERATED = new Set(['bench/README.md']);

/** The Markdown files whose links are checked, relative to the root. */
function documents() {
  const files = ['README.md', 'CONTRIBUTING.md'];
  for (const name of fs.readdirSync(path.join(ROOT, 'docs')).sort()) if (name.endsWith('.md')) files.push(`docs/${name}`);
  if (fs.existsSync(path.join(ROOT, 'bench', 'README.md'))) files.push('bench/README.md');
  for (const entry of fs.readdirSync(path.join(ROOT, 'examples'), { withFileTypes: true })) {
    if (entry.isDirectory() && fs.existsSync(path.join(ROOT, 'examples', entry.name, 'README.md'))) files.push(`examples/${entry.name}/README.md`);
  }
  return files;
}

const read = (file) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/** The lines outside fenced code blocks, where a `#` starts a heading and `[x](y)` is a link. */
function proseLines(text) {
  const lines = [];
  let fence;
  for (const line of text.split('\n')) {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker !== undefined) fence = marker;
    else if (fence !== undefined && marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
    else if (fence === undefined) lines.push(line);
  }
  return lines;
}

/** Inline code spans removed, paragraph by paragraph, as GitHub pairs their backticks. */
function withoutCode(lines) {
  return lines
    .join('\n')
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.replace(/(`+)[\s\S]*?\1/g, 'code'))
    .join('\n\n');
}

/** GitHub's anchor for a heading: its text lowercased, punctuation dropped, each space a hyphen. */
function slug(heading) {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .replace(/\*/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings; a repeated one gets -1, -2, ... as on GitHub. */
function anchors(text) {
  const seen = new Map();
  const found = new Set();
  for (const line of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (heading === null) continue;
    const base = slug(heading[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

/** The links of a Markdown file: `[text](target)` and `![alt](target)`, outside code. */
function links(text) {
  return [...withoutCode(proseLines(text)).matchAll(/\[[^\]]*\]\(\s*<?([^()\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
}

/**
 * Where a relative link of `file` goes wrong, or undefined when it resolves: the file or folder
 * exists inside the repository, and its #anchor (if any) is a heading of that Markdown file.
 */
function problemOf(file, target) {
  const hash = target.indexOf('#');
  const linkPath = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const resolved = linkPath === '' ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), decodeURIComponent(linkPath));
  const relative = path.relative(ROOT, resolved).split(path.sep).join('/');
  if (relative.startsWith('..') || path.isAbsolute(relative)) return 'outside the repository';
  if (!fs.existsSync(resolved)) return GENERATED.has(relative) ? undefined : `no such file: ${relative}`;
  if (anchor === undefined) return undefined;
  if (!relative.endsWith('.md')) return `an anchor into ${relative}, which is not Markdown`;
  return anchors(read(relative)).has(anchor) ? undefined : `no heading for #${anchor} in ${relative}`;
}

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

/** Every broken relative link in the text of `file`, as `file: target (why)`. */
function brokenLinks(file, text = read(file)) {
  const broken = [];
  for (const target of links(text)) {
    if (EXTERNAL.test(target)) continue;
    const problem = problemOf(file, target);
    if (problem !== undefined) broken.push(`${file}: ${target} (${problem})`);
  }
  return broken;
}

/** The links in the README's `## Documentation` section, resolved relative to the root. */
function documentationList() {
  const readme = read('README.md');
  const start = readme.indexOf('\n## Documentation\n');
  assert.notEqual(start, -1, 'the README has a Documentation section');
  const next = readme.indexOf('\n## ', start + 1);
  return links(readme.slice(start, next === -1 ? undefined : next)).map((target) => target.split('#')[0]);
}

describe('the docs', () => {
  it('every relative link and #anchor in the README, CONTRIBUTING.md, docs/, bench/ and the examples resolves', () => {
    const files = documents();
    assert.ok(files.length >= 15, `${files.length} documents`);
    assert.deepEqual(
      files.flatMap((file) => brokenLinks(file)),
      [],
    );
  });

  it('a link to a missing file, a missing heading or a folder outside the repository is caught', () => {
    // A page as it would sit in docs/ (its own #anchors are read from the file named, options.md here).
    const text =
      '[a](nowhere.md) [b](options.md#no-such-heading) [c](../../outside) [d](options.md#funcyaml) [e](#options)\n\n`[f](in-code.md)`\n\n```md\n[g](in-a-block.md)\n```\n';
    assert.deepEqual(brokenLinks('docs/options.md', text), [
      'docs/options.md: nowhere.md (no such file: docs/nowhere.md)',
      'docs/options.md: options.md#no-such-heading (no heading for #no-such-heading in docs/options.md)',
      'docs/options.md: ../../outside (outside the repository)',
    ]);
  });

  it("anchors follow GitHub's rules: code and punctuation dropped, spaces hyphens, repeats numbered", () => {
    assert.equal(slug('Routes, 404, 405, HEAD and CORS'), 'routes-404-405-head-and-cors');
    assert.equal(slug("faas-js-runtime's own test suite"), 'faas-js-runtimes-own-test-suite');
    assert.equal(slug('Request-scoped `log`'), 'request-scoped-log');
    assert.equal(slug('func.yaml'), 'funcyaml');
    assert.equal(slug('`FUNC_COMPAT` and [the table](x.md)'), 'func_compat-and-the-table');
    assert.deepEqual([...anchors('# A\n## A\n```sh\n# not a heading\n```\n## A #\n')], ['a', 'a-1', 'a-2']);
  });

  it(`the README is a guide of at most ${README_MAX_LINES} lines`, () => {
    const lines = read('README.md').replace(/\n$/, '').split('\n').length;
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines`);
  });

  it("the README's Documentation list links every page of docs/", () => {
    const listed = new Set(documentationList());
    const pages = fs
      .readdirSync(path.join(ROOT, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`);
    assert.deepEqual(
      pages.filter((page) => !listed.has(page)),
      [],
    );
    for (const other of ['CONTRIBUTING.md', 'bench/README.md', 'examples/image-integration/README.md']) assert.ok(listed.has(other), other);
  });

  it('every page of docs/ opens with its title and a summary paragraph', () => {
    for (const name of fs.readdirSync(path.join(ROOT, 'docs')).filter((n) => n.endsWith('.md'))) {
      const [title, blank, first] = read(`docs/${name}`).split('\n');
      assert.match(title, /^# \S/, name);
      assert.equal(blank, '', name);
      assert.doesNotMatch(first, /^(#|\||```|~~~|[-*+] |\d+\. |>|<|\s|$)/, `${name} opens with a paragraph`);
    }
  });

  const missing = [...GENERATED].filter((file) => !fs.existsSync(path.join(ROOT, file)));
  it('the generated pages the docs link are committed', { todo: missing.length > 0 ? `${missing.join(', ')}: run npm run bench -- --markdown` : false }, () => {
    assert.deepEqual(missing, []);
  });
});
