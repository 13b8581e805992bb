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
// A cache holds funcrun's file and V8's code for it, never data the code later read (func.yaml's
// values stay in func.yaml; start/func-yaml-cache.ts keeps their places). It lives in the folder the entry point chose for node's compile cache
// (compile-cache.ts), never a shared one, named for the node that made it.
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isAscii } from 'node:buffer';
import { Module, createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import type { Script } from 'node:vm';

/**
 * The process's code caches, one per process as node's compile cache is (this module is outside
 * the bundle: the entry points and the bundle share it): the folder an entry point turned them on
 * in, and the files loaded here whose cache is still to be written, once they have run (keepCompiled).
 */
const codeCaches: { folder: string | undefined; readonly unsaved: Map<string, { script: Script; cacheFile: string; code: Buffer }> } = {
  folder: undefined,
  unsaved: new Map(),
};

/** Called by the entry points with the compile cache's folder: without it, files load by require(). */
export function useCodeCache(directory: string): void {
  codeCaches.folder = directory;
}

/** The bundle, for the entry points to load first: through its code cache when they turned it on. */
export const RUNTIME = join(__dirname, '..', 'runtime.js');

/** The YAML parser, bundled on its own (start/func-yaml.ts loads it when there is a func.yaml). */
export const YAML_PARSER = join(__dirname, '..', 'yaml.js');

/** The folder of the code caches, when an entry point turned them on. */
export function codeCacheFolder(): string | undefined {
  return codeCaches.folder;
}

/** `file`'s cache in `directory`, named for the node that made it: processes of two node versions sharing the folder keep a cache each. */
export function cacheFileOf(file: string, directory: string): string {
  return join(directory, `${basename(file)}.${process.version}-${process.arch}.v8cache`);
}

/** `require(file)`, through the code cache when an entry point turned it on. `file` is an absolute path. */
export function requireCached(file: string): unknown {
  const loaded = require.cache[file];
  if (loaded !== undefined) return loaded.exports;
  const { folder, unsaved } = codeCaches;
  if (folder === undefined) return require(file);
  const cacheFile = cacheFileOf(file, folder);
  const code = readFileSync(file);
  const cachedData = cacheFor(cacheFile, code);
  const vm = require('node:vm') as typeof import('node:vm');
  // The module wrapper on the file's first line, so that stack lines keep their numbers.
  // The bundles are ASCII (scripts/bundle.js sees to it): read as latin1, a byte a character, the
  // text is a one-byte string made without UTF-8 decoding, some 2.5 ms less of a start.
  const text = isAscii(code) ? code.toString('latin1') : code.toString('utf8');
  const source = `(function (exports, require, module, __filename, __dirname) {${text}\n})`;
  const script = new vm.Script(source, { filename: file, cachedData });
  const module = new Module(file);
  module.filename = file;
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  run.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  module.loaded = true;
  require.cache[file] = module;
  // V8 refuses a cache made by another node or with other flags.
  if (cachedData === undefined || script.cachedDataRejected === true) unsaved.set(file, { script, cacheFile, code });
  return module.exports;
}

// A cache file: the length of the code it was made from (4 bytes), that code, then V8's data twice.
// V8 itself checks only the code's length: a file changed to another of the same length (a
// rebuild that turns one digit into another) would run as the old one. So the code is kept and
// compared (a read and a memcmp). V8 checks its data's length but not its bytes (its checksum is
// on in debug builds only): a damaged byte ran as other code, or crashed every start before the
// cache could be replaced. So the data is kept twice, and the two copies compared: a byte damaged
// in either makes them differ. Against damage, not an attacker: whoever can write this folder can
// write funcrun itself. A copy compared, not a checksum: a memcmp of the data costs a start some
// microseconds, where a checksum loop in JavaScript cost it 13 million instructions (5-8 ms),
// and loading node:crypto or node:zlib for theirs costs as much.

/**
 * The most V8 data a cache of `length` bytes of code is read with: 8 times the code, and 64 KiB
 * for a small file. V8's data measured 0.9 times the bundle's code and 1.4 times the YAML
 * parser's, so a real cache is never near it; a larger file is no cache of this code.
 */
const maxDataLength = (length: number) => 8 * length + 64 * 1024;

function cacheFor(cacheFile: string, code: Buffer): Buffer | undefined {
  // No cache yet (this start makes it), or nothing a cache can be.
  const kept = regularFile(cacheFile, 4 + code.length + 2 * maxDataLength(code.length));
  if (kept === undefined || kept.length < 4) return undefined;
  const length = kept.readUInt32LE(0);
  const copies = kept.length - 4 - length;
  if (length !== code.length || copies <= 0 || copies % 2 !== 0 || !kept.subarray(4, 4 + length).equals(code)) return undefined;
  const half = 4 + length + copies / 2;
  const cachedData = kept.subarray(4 + length, half);
  return cachedData.equals(kept.subarray(half)) ? cachedData : undefined;
}

// Opened without following a link (keepCompiled renames a file there, never a link: one is not its
// cache) and without blocking (a FIFO opens at once, and is then refused, as a device is).
const OPEN_CACHE = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/**
 * The bytes of the regular file at `path` when it holds at most `limit`, else undefined: whatever
 * else is there (a FIFO, a link to /dev/zero, a file too large) would stop the start or fill its
 * memory. It is then replaced as a missing cache is (keepCompiled's rename replaces the entry, and
 * never writes through it).
 */
export function regularFile(path: string, limit: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, OPEN_CACHE);
  } catch {
    return undefined;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.size > limit) return undefined;
    // The size read once: a file that grows meanwhile is read as it was, and fails its checks.
    const bytes = Buffer.allocUnsafe(stats.size);
    let read = 0;
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return bytes.subarray(0, read);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** After `file` has done its work: its cache is written, with what V8 has compiled of it by now, if it needs one. */
export function keepCompiled(file: string): void {
  const entry = codeCaches.unsaved.get(file);
  if (entry === undefined) return;
  codeCaches.unsaved.delete(file);
  writeCacheFile(entry.cacheFile, () => {
    const length = Buffer.alloc(4);
    length.writeUInt32LE(entry.code.length);
    const cachedData = entry.script.createCachedData();
    return Buffer.concat([length, entry.code, cachedData, cachedData]);
  });
}

/**
 * Writes a file of the cache folder whole or not at all (another process starting beside this one
 * reads either file entire), with the mode of any new file (an image leaves the folder to root
 * and runs as another user, who must read them); a write that fails is given up.
 */
export function writeCacheFile(cacheFile: string, bytes: () => Buffer | string): void {
  const partial = `${cacheFile}.${process.pid}`;
  try {
    mkdirSync(dirname(cacheFile), { recursive: true });
    writeFileSync(partial, bytes());
    renameSync(partial, cacheFile);
  } catch {
    // A folder that cannot be written (a read-only image): starts compile as before. What was
    // written of the file goes: a full disk, or a folder where the cache goes, would otherwise
    // leave one behind at every start.
    try {
      rmSync(partial, { force: true });
    } catch {
      // A folder that refuses this too holds no partial file.
    }
  }
}

/** `import(url)` for the bundle, whichever way it was loaded. `url` is absolute (a file: URL). */
export function importModule(url: string): Promise<unknown> {
  return import(url);
}
