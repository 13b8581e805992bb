'use strict';
// The request target read once (http/target.ts): scanTarget() gives what readTarget() gives, and
// whether the target is plain, by the definition below, for targets of every shape.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { readTarget, scanTarget } = require('../../lib/http/target.js');

const KEPT = new Set('!$%&()*+,-./0123456789:;=?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz|~');

/** Plain, as the docs define it: `/` first, only characters the URL standard keeps, no `%`, no `.` right after a `/`. */
function plainByDefinition(url) {
  if (!url.startsWith('/')) return false;
  for (let i = 1; i < url.length; i++) {
    if (!KEPT.has(url[i]) || url[i] === '%' || (url[i] === '.' && url[i - 1] === '/')) return false;
  }
  return true;
}

describe('scanTarget', () => {
  it("gives readTarget()'s path and query and whether the target is plain, for chosen targets", () => {
    for (const url of [
      '/',
      '/items/42',
      '/a?b=1&c=/./d',
      '/a/.b',
      '/a.b/c',
      '/%2e/x',
      '/a b',
      '/é?x',
      '/x#y',
      '/x\\y',
      '/?',
      '//x',
      'http://h/p?q',
      '*',
      '/a?b?c',
      '/a/..?x',
    ]) {
      const { path, search } = readTarget(url);
      assert.deepEqual(scanTarget(url), { path, search, plain: plainByDefinition(url) }, url);
    }
  });

  it('agrees with the definition on random targets', () => {
    const alphabet = ['/', '.', '%', '?', '#', '\\', 'a', 'Z', '0', '-', '~', ' ', 'é', '\u0000', '=', '&'];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % alphabet.length;
    for (let n = 0; n < 5000; n++) {
      let url = n % 7 === 0 ? '' : '/';
      for (let length = n % 12; length > 0; length--) url += alphabet[next()];
      const { path, search } = readTarget(url);
      assert.deepEqual(scanTarget(url), { path, search, plain: plainByDefinition(url) }, JSON.stringify(url));
    }
  });
});
