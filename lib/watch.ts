// `funcrun serve --watch`: the function runs in a child process (serve.js --from-source), stopped
// and started again when a file of its folder is saved. chokidar watches, not node's recursive
// fs.watch (nor `node --watch-path`, built on it): on Linux that stops seeing a file once it has
// been replaced (an editor's atomic save, git checkout, a file moved in), so every later save of
// it would be lost without a word.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { EXIT } from './exit';
import { canRunTypeScript } from './loader';
import { flagOptions, fromEnvironment, fromFlags } from './settings';

const SERVE = join(__dirname, 'serve.js');

/** Saves this close together are one restart: an editor's "save all", a git checkout. */
const SETTLE_MS = 150;

/**
 * The files a save of restarts the function: its code, and JSON and YAML (package.json,
 * func.yaml). Not the rest: a log the function (or `funcrun serve --watch > out.log`) writes in
 * its folder would restart it on every line, and an editor's swap and temp files are not code.
 */
const SOURCE = /\.(?:[cm]?[jt]s|json|ya?ml)$/i;

/** Serves the function named by `args` (serve's command line, without --watch) until a signal. */
export async function watchAndServe(args: string[]): Promise<void> {
  const folder = watchedFolder(args);
  if (folder === undefined) {
    // A command line serve refuses, or a path that is not there: serve says why, as without
    // --watch, and its exit code is funcrun's.
    spawn(process.execPath, [SERVE, ...args], { stdio: 'inherit' }).once('exit', (code) => process.exit(code ?? EXIT.FAILED));
    return;
  }
  // Never watched, so that an npm install or a build is not a storm of restarts.
  const build = buildOutput(folder);
  const isIgnored = (path: string) => {
    const parts = relative(folder, path).split(sep);
    return parts.includes('node_modules') || parts.includes('.git') || parts[0] === build;
  };
  let child: ChildProcess | undefined;
  let replacing = false;
  let exiting = false;
  let settle: NodeJS.Timeout | undefined;
  // The files saved since the last restart, and whether each was new in that time.
  const changed = new Map<string, 'added' | 'changed'>();

  const run = () => {
    replacing = false;
    // A TypeScript project runs from its source, so an edit needs no tsc (where node strips types).
    const started = spawn(process.execPath, [SERVE, ...args, '--from-source'], { stdio: 'inherit' });
    child = started;
    started.once('exit', (code, signal) => {
      if (exiting) return;
      // A start error, func.yaml's included (a syntax error, a value refused), waits for the save
      // that fixes it: the command line and the variables were checked before the first start.
      if (replacing) return run();
      child = undefined;
      process.stderr.write(`funcrun: the function stopped (${code !== null ? `exit code ${code}` : signal}); the next save starts it again\n`);
    });
  };
  const restart = () => {
    if (changed.size === 0) return;
    process.stderr.write(`funcrun: ${listed([...changed.keys()])} changed, restarting\n`);
    changed.clear();
    if (child === undefined) return run();
    // The child drains its requests in flight (its grace period), then its exit starts the next
    // one, once however many saves come meanwhile: that one reads every file as it is then.
    if (replacing) return;
    replacing = true;
    child.kill('SIGTERM');
  };

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      exiting = true;
      clearTimeout(settle);
      if (child === undefined) process.exit(0);
      child.once('exit', (code) => process.exit(code ?? 0));
      child.kill(signal);
    });
  }

  // Loaded here, so that serving without --watch never reads it.
  const { watch } = await import('chokidar');
  const watcher = watch(folder, { ignoreInitial: true, ignored: isIgnored });
  watcher.on('all', (event, path) => {
    // An empty folder made changes nothing; one removed takes its files with it.
    if (exiting || !['add', 'change', 'unlink', 'unlinkDir'].includes(event)) return;
    if (event !== 'unlinkDir' && !SOURCE.test(path)) return;
    const name = relative(folder, path);
    // A file that came and went meanwhile (an editor's temp file, renamed over the original) changed nothing.
    if (event === 'unlink' && changed.get(name) === 'added') changed.delete(name);
    else if (!changed.has(name)) changed.set(name, event === 'add' ? 'added' : 'changed');
    clearTimeout(settle);
    settle = setTimeout(restart, SETTLE_MS);
  });
  // Said, not swallowed: a watcher that failed is a reload that will not come.
  watcher.on('error', (err) => process.stderr.write(`funcrun: watching ${folder} failed: ${(err as Error).message ?? String(err)}\n`));
  await new Promise<void>((ready) => watcher.once('ready', () => ready()));
  process.stderr.write(`funcrun: watching ${folder} (not node_modules, .git${build === undefined ? '' : ` or ${build}`})\n`);
  // Started once the watcher is ready, so that no save after the function has read its files goes unseen.
  run();
}

/**
 * The function's folder: the path serve is given, or the folder of the file it is given;
 * undefined when serve would refuse the command line (a flag, or a value of a flag or a variable:
 * no save can fix them) or find no such path.
 */
function watchedFolder(args: string[]): string | undefined {
  let positionals: string[];
  try {
    let values;
    ({ positionals, values } = parseArgs({ args, options: { ...flagOptions(), 'from-source': { type: 'boolean' } }, allowPositionals: true, strict: true }));
    fromFlags(values);
    fromEnvironment(process.env);
  } catch {
    return undefined;
  }
  const target = resolve(positionals[0] ?? '.');
  try {
    return statSync(target).isDirectory() ? target : dirname(target);
  } catch {
    return undefined;
  }
}

/**
 * A TypeScript project's build output, which --watch does not run where node strips types (it
 * runs src/index.ts), so a build must not restart the function: the top folder of its "main"
 * (build/src/index.js: build), or build, where its build goes without one (loader.ts).
 */
function buildOutput(folder: string): string | undefined {
  if (!existsSync(join(folder, 'src', 'index.ts')) || !canRunTypeScript()) return undefined;
  let main: unknown;
  try {
    main = (JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { main?: unknown }).main;
  } catch {
    // No package.json, or one serve reports.
  }
  if (typeof main !== 'string' || main === '') return 'build';
  const [top, ...below] = normalize(main).split(sep);
  return below.length > 0 && top !== '.' && top !== '..' && top !== 'src' ? top : undefined;
}

function listed(paths: string[]): string {
  return paths.length <= 3 ? paths.join(', ') : `${paths.slice(0, 3).join(', ')} and ${paths.length - 3} more`;
}
