// Loading funcrun's bundle (lib/runtime.js) and its YAML parser (lib/yaml.js) with V8 code caches
// made after their first use. node's compile cache keeps only what V8 compiled when a file was
// loaded; a start then compiles the rest lazily, function by function as it first runs: the
// parser's functions when func.yaml is read, the bundle's on the way to listening and through the
// first request. A cache made once they have run holds those functions too, so a later start
// neither compiles nor interprets them cold.
//
// A file loaded here runs as CommonJS in a `vm.Script` and is entered in `require.cache` under its
// own path, so that a plain require() of it anywhere gets the same copy. Such a script has no
// import() of its own (node gives it one only behind an experimental option, with a warning on
// stderr), so the bundle imports an ESM function through importModule(), here.
//
// A cache holds compiled code only, never data the code later read (func.yaml's values stay in
// func.yaml). It lives in the folder the entry point chose for node's compile cache
// (compile-cache.ts), never a shared one, named for the node that made it.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { Module, createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import type { Script } from 'node:vm';

let folder: string | undefined;

/** Called by the entry points with the compile cache's folder: without it, files load by require(). */
export function useCodeCache(directory: string): void {
  folder = directory;
}

/** Files loaded here whose cache is still to be written, once they have run (keepCompiled). */
const unsaved = new Map<string, { script: Script; cacheFile: string }>();

/** The bundle, for the entry points to load first: through its code cache when they turned it on. */
export const RUNTIME = join(__dirname, 'runtime.js');

/** `require(file)`, through the code cache when an entry point turned it on. `file` is an absolute path. */
export function requireCached(file: string): unknown {
  const loaded = require.cache[file];
  if (loaded !== undefined) return loaded.exports;
  if (folder === undefined) return require(file);
  // Named for the node that made it: processes of two node versions sharing the folder keep a cache each.
  const cacheFile = join(folder, `${basename(file)}.${process.version}-${process.arch}.v8cache`);
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    // No cache yet: this start makes it.
  }
  const vm = require('node:vm') as typeof import('node:vm');
  // The module wrapper on the file's first line, so that stack lines keep their numbers.
  const source = `(function (exports, require, module, __filename, __dirname) {${readFileSync(file, 'utf8')}\n})`;
  const script = new vm.Script(source, { filename: file, cachedData });
  const module = new Module(file);
  module.filename = file;
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  run.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  module.loaded = true;
  require.cache[file] = module;
  // V8 refuses a cache made by another node, other flags or another version of the file.
  if (cachedData === undefined || script.cachedDataRejected === true) unsaved.set(file, { script, cacheFile });
  return module.exports;
}

/** After `file` has done its work: its cache is written, with what V8 has compiled of it by now, if it needs one. */
export function keepCompiled(file: string): void {
  const entry = unsaved.get(file);
  if (entry === undefined) return;
  unsaved.delete(file);
  try {
    mkdirSync(dirname(entry.cacheFile), { recursive: true });
    // Whole or not at all: another process starting beside this one reads either file entire.
    const partial = `${entry.cacheFile}.${process.pid}`;
    writeFileSync(partial, entry.script.createCachedData());
    renameSync(partial, entry.cacheFile);
  } catch {
    // A folder that cannot be written (a read-only image): starts compile as before.
  }
}

/** `import(url)` for the bundle, whichever way it was loaded. `url` is absolute (a file: URL). */
export function importModule(url: string): Promise<unknown> {
  return import(url);
}
