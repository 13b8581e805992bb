#!/usr/bin/env node
'use strict';
// Runs the funcrun this package depends on (`npm start`: `node scripts/funcrun.js serve .`), never
// another one. npm puts every parent folder's node_modules/.bin on the PATH, and links a package's
// command only if its file exists when it installs; in funcrun's checkout `npm install` comes before
// the build that makes funcrun's lib/tools/cli.js, so `funcrun` would be missing from node_modules/.bin,
// and a `funcrun` in a parent folder would run instead, or none. So the command is found as
// `require` finds the package: this package's own node_modules/funcrun (a copy from a tarball or a
// registry), or, in funcrun's checkout, the workspace's link to the checkout.
//
// In funcrun's checkout, funcrun's lib/ is built first when it is not (`npm run build` at the top,
// which builds this package too), so that either README's commands work from a fresh clone in
// either order. `--built` only does that (the `prebuild` script), and runs nothing.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = path.join(__dirname, '..');

function fail(message) {
  process.stderr.write(`image-integration: ${message}\n`);
  process.exit(1);
}

/** funcrun's folder, as `require` resolves it from this package; refused if it is not this package's. */
function funcrunFolder() {
  let manifest;
  try {
    manifest = require.resolve('funcrun/package.json', { paths: [here] });
  } catch {
    fail(`funcrun is not installed: run npm install in ${here}`);
  }
  const folder = fs.realpathSync(path.dirname(manifest));
  const own = fs.realpathSync(here);
  // Its own copy (node_modules/funcrun inside this package), or the checkout this package sits in.
  const inside = (parent, child) => child === parent || child.startsWith(parent + path.sep);
  if (!inside(own, folder) && !inside(folder, own)) {
    fail(`the funcrun found (${folder}) is not this package's: run npm install in ${here}`);
  }
  return folder;
}

function commandOf(folder) {
  const { bin } = JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8'));
  return path.join(folder, typeof bin === 'string' ? bin : bin.funcrun);
}

/** Builds funcrun's checkout when its lib/ is not built; a package from a tarball is built already. */
function ensureBuilt(folder) {
  const built = ['lib/tools/cli.js', 'lib/index.js', 'lib/index.d.ts', 'lib/tools/testing.js'].every((file) => fs.existsSync(path.join(folder, file)));
  if (built) return;
  if (!fs.existsSync(path.join(folder, 'src', 'index.ts'))) fail(`funcrun in ${folder} is not built, and is no checkout to build: reinstall it`);
  process.stderr.write(`image-integration: building funcrun in ${folder} (npm run build)\n`);
  // The npm running this script, when npm runs it; else the one on the PATH.
  const npm = process.env.npm_execpath;
  const [file, args] = npm ? [process.execPath, [npm, 'run', 'build']] : ['npm', ['run', 'build']];
  execFileSync(file, args, { cwd: folder, stdio: 'inherit', shell: !npm && process.platform === 'win32' });
}

const folder = funcrunFolder();
ensureBuilt(folder);
if (process.argv[2] !== '--built') {
  const command = commandOf(folder);
  // The command as if it were run itself: it reads process.argv from index 2.
  process.argv.splice(1, Infinity, command, ...process.argv.slice(2));
  require(command);
}
