// A failed start, explained: what went wrong in one line (with file:line:column for a syntax
// error), and what to do about it where funcrun knows (a `.ts` file imported as `.js`, a port in
// use). serve.ts writes it as a JSON line, or as text on a terminal.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from './func-yaml';
import { describeThrown } from '../log/redact';
import { LoadError } from './loader';

export interface StartFailure {
  /** One line: what went wrong. */
  message: string;
  /** What to do about it, when funcrun knows. */
  hint?: string;
  /** Where, for a syntax error: the file (relative to the current folder), line and column. */
  at?: { file: string; line: number; column: number };
  /** The offending source line with a caret under the column. */
  excerpt?: string;
  /** An error whose stack the log should keep: one of the function's own, not funcrun's message. */
  stack?: unknown;
}

/** Explains why the start failed. Never throws: anything may have been thrown. */
export function explainStartFailure(err: unknown): StartFailure {
  try {
    return explain(err);
  } catch {
    return { message: 'the function failed to start: it threw a value that cannot be read' };
  }
}

function explain(err: unknown): StartFailure {
  // funcrun's own configuration errors say everything in their message.
  if (err instanceof ConfigError) return { message: err.message };
  if (err instanceof LoadError) {
    const cause = err.cause;
    if (cause instanceof SyntaxError && err.file !== undefined) return syntaxError(cause, err.file);
    const missing = missingModule(cause, err.file);
    // Where node looked is in the message: its stack holds only node's own resolver.
    if (missing !== undefined) return { message: err.message, hint: missing };
    return { message: err.message, stack: cause };
  }
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'EADDRINUSE' || code === 'EACCES') {
    const port = (err as { port?: unknown }).port;
    const other = typeof port === 'number' && port > 0 && port < 65535 ? port + 1 : 8081;
    return {
      message: code === 'EADDRINUSE' ? `port ${String(port)} is already in use` : `not allowed to listen on port ${String(port)}`,
      hint: `serve on another port: ${moveTo(err as { setBy?: unknown; address?: unknown }, other)}${code === 'EACCES' ? '; ports below 1024 need privileges' : ''}`,
    };
  }
  if (code === 'EADDRNOTAVAIL') {
    const address = (err as { address?: unknown }).address;
    return {
      message: `cannot listen on ${String(address)}: no network interface of this machine has that address`,
      hint: 'listen on one it has, or on all of them: LISTEN_ADDRESS=0.0.0.0:<port> (or --host 0.0.0.0)',
    };
  }
  // Anything else (a throwing init(), say) is the function's own: its message, and its stack in the log.
  return { message: err instanceof Error ? err.message : `the function failed to start: it threw ${describeThrown(err)}`, stack: err };
}

/**
 * How to move the port, with what set it: the flag, LISTEN_ADDRESS with the same host (it comes
 * before PORT), or the variable (PORT or FUNC_PORT); PORT, or the flag, when the port was the default.
 */
function moveTo({ setBy, address }: { setBy?: unknown; address?: unknown }, port: number): string {
  if (setBy === '--port') return `--port ${port}`;
  if (setBy === 'LISTEN_ADDRESS') {
    const host = typeof address !== 'string' || address === '::' ? '' : address.includes(':') ? `[${address}]` : address;
    return `LISTEN_ADDRESS=${host}:${port} (or --port ${port})`;
  }
  return `${setBy === 'FUNC_PORT' ? 'FUNC_PORT' : 'PORT'}=${port} (or --port ${port})`;
}

// V8 prints a syntax error's place at the top of its stack for CommonJS and TypeScript:
// `/path/index.js:3`, lines of source, then a line of carets under the error. ESM errors carry
// no place: the same file is checked with `node --check`, which prints it the same way.
function syntaxError(error: SyntaxError, file: string): StartFailure {
  const place = placeIn(String(error.stack ?? '')) ?? placeIn(checkedSyntax(file));
  const what = `${error.name}: ${error.message}`;
  if (place === undefined) return { message: `${what} (in ${relativeName(file)} or a module it imports)` };
  const at = { file: relativeName(place.file), line: place.line, column: place.column };
  return { message: `${at.file}:${at.line}:${at.column}: ${what}`, at, excerpt: place.excerpt, hint: typeImportHint(error, place.file) };
}

// Node runs TypeScript source without its types, so a type imported as a value is missing at run
// time, and node's own advice (a default import of a CommonJS package) does not apply.
function typeImportHint(error: SyntaxError, file: string): string | undefined {
  const name = /^Named export '([^']+)' not found/.exec(error.message)?.[1];
  if (name === undefined || !/\.[cm]?ts$/.test(file)) return undefined;
  return `if ${name} is a type, import it with import type { ${name} } (node runs the source without its types), or build the project (npm run build) and serve the build`;
}

interface Place {
  file: string;
  line: number;
  column: number;
  excerpt: string;
}

function placeIn(text: string): Place | undefined {
  const lines = text.split('\n', 12);
  const head = /^(.+):(\d+)$/.exec(lines[0] ?? '');
  if (head === null) return undefined;
  // The line under the source: carets under the error, or (at the end of the input) only the
  // spaces up to it.
  const caret = lines.findIndex((line, i) => i > 1 && line !== '' && /^\s*\^*\s*$/.test(line));
  if (caret === -1) return undefined;
  const file = head[1].startsWith('file://') ? fileURLToPath(head[1]) : head[1];
  const under = lines[caret].includes('^') ? lines[caret] : `${lines[caret]}^`;
  return { file, line: Number(head[2]), column: under.indexOf('^') + 1, excerpt: `${lines[caret - 1]}\n${under.trimEnd()}` };
}

// Only on the failure path, and bounded: the start has failed already.
function checkedSyntax(file: string): string {
  try {
    // Loaded only for a failed start: a start that succeeds never pays for child_process.
    const { spawnSync } = require('node:child_process') as typeof import('node:child_process');
    return spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 5000 }).stderr ?? '';
  } catch {
    return '';
  }
}

/**
 * A module node looked for and did not find. Inside another package (a dependency whose `main` or
 * `exports` names a file that is not there, as in an unbuilt `file:` or workspace package), the
 * package is named and said to be unbuilt. In the function's own files, a relative import that names
 * a `.js` file when the TypeScript file it means is there: node runs the source as it is, so
 * `./shout.js` must be written `./shout.ts` (tsc's rewriteRelativeImportExtensions turns it back
 * into `.js` in the build).
 */
function missingModule(cause: unknown, importer: string | undefined): string | undefined {
  const code = (cause as NodeJS.ErrnoException | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return undefined;
  // ESM says "Cannot find package" for a package whose main is missing, and "module" otherwise.
  const named = /Cannot find (?:module|package) '([^']+)'/.exec(String((cause as Error).message))?.[1];
  if (named === undefined) return undefined;
  // A package by its name: not installed (or not yet, in a folder just made or cloned).
  if (!isAbsolute(named) && !named.startsWith('.')) {
    const name = named.startsWith('@') ? named.split('/').slice(0, 2).join('/') : named.split('/')[0];
    return `the package ${name} is not installed: run npm install in the function's folder (npm install ${name}, if package.json does not list it)`;
  }
  if (!isAbsolute(named)) return undefined;
  const owner = packageRoot(dirname(named));
  if (owner !== undefined && (importer === undefined || owner !== packageRoot(dirname(importer)))) return unbuiltPackage(owner, named);
  const asTypeScript = /\.(m|c)?js$/.test(named) ? named.replace(/\.(m|c)?js$/, '.$1ts') : `${named}.ts`;
  if (!existsSync(asTypeScript)) return undefined;
  const wrote = named.split('/').pop()!;
  const meant = asTypeScript.split('/').pop()!;
  return `import './${meant}', not './${wrote}': node runs the TypeScript source as it is, and the file is ${meant} (tsc's rewriteRelativeImportExtensions makes it .js in the build)`;
}

/** The folder of the nearest package.json at or above `folder`. */
function packageRoot(folder: string): string | undefined {
  for (let dir = folder; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

// A dependency's entry file is missing: with its sources there (a build script, a tsconfig.json,
// a .ts file where the .js should be), it was installed without being built.
function unbuiltPackage(root: string, missing: string): string {
  let manifest: { name?: unknown; main?: unknown; exports?: unknown; scripts?: { build?: unknown } } = {};
  try {
    manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as typeof manifest;
  } catch {
    // An unreadable package.json: the package is still named by its folder.
  }
  const name = typeof manifest?.name === 'string' ? manifest.name.slice(0, 214) : root.split('/').pop()!;
  const file = relative(root, missing);
  const named = isEntry(manifest, file) ? `${file}, the file its package.json names` : file;
  const where = `the package '${name}' (${relativeName(root)})`;
  const sources =
    typeof manifest?.scripts?.build === 'string' ||
    existsSync(join(root, 'tsconfig.json')) ||
    existsSync(missing.replace(/\.(m|c)?js$/, '.$1ts')) ||
    existsSync(join(root, 'src', 'index.ts'));
  if (!sources) return `${where} has no ${named}: install it again (npm install)`;
  // A file: or workspace dependency is a link to its own folder: that is where it is built.
  let source = root;
  try {
    source = realpathSync(root);
  } catch {
    // The folder as node found it.
  }
  return `${where} is not built: it has no ${named}; build it (npm run build in ${relativeName(source)}), then start again`;
}

function isEntry(manifest: { main?: unknown; exports?: unknown }, file: string): boolean {
  const main = typeof manifest?.main === 'string' ? manifest.main.replace(/^\.\//, '') : undefined;
  if (main === file || main === file.replace(/\.js$/, '')) return true;
  try {
    return JSON.stringify(manifest?.exports ?? null).includes(`"./${file}"`);
  } catch {
    return false;
  }
}

function relativeName(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel.startsWith('..') || rel === '' ? file : rel;
}
