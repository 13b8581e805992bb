// `funcrun serve --watch`: the function runs in a child process (serve.js --from-source), stopped
// and started again when a file of its folder is saved. chokidar watches, not node's recursive
// fs.watch (nor `node --watch-path`, built on it): on Linux that stops seeing a file once it has
// been replaced (an editor's atomic save, git checkout, a file moved in), so every later save of
// it would be lost without a word.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { applyEnvs, readFuncYaml } from '../start/func-yaml';
import { EXIT } from '../start/exit';
import { canRunTypeScript } from '../start/loader';
import { SIGNAL_ECHO_MS } from '../serve';
import { flagOptions, fromEnvironment, fromFlags, SETTINGS, type Values } from '../start/settings';

const SERVE = join(__dirname, '..', 'serve.js');

/** Saves this close together are one restart: an editor's "save all", a git checkout. */
const SETTLE_MS = 150;

/**
 * The files a save of restarts the function: its code, and JSON and YAML (package.json,
 * func.yaml). Not the rest: a log the function (or `funcrun serve --watch > out.log`) writes in
 * its folder would restart it on every line, and an editor's swap and temp files are not code.
 */
const SOURCE = /\.(?:[cm]?[jt]s|json|ya?ml)$/i;

/**
 * Past the time a child may take to stop (stopLimit), what it has to write its last lines before
 * it is killed.
 */
const KILL_MARGIN_MS = 1000;

/** Serves the function named by `args` (serve's command line, without --watch) until a signal. */
export async function watchAndServe(args: string[]): Promise<void> {
  const watched = watchedFolder(args);
  if (watched === undefined) {
    // A command line serve refuses, or a path that is not there: serve says why, as without
    // --watch, and its exit code is funcrun's.
    spawn(process.execPath, [SERVE, ...args], { stdio: 'inherit' }).once('exit', (code) => process.exit(code ?? EXIT.FAILED));
    return;
  }
  const { folder, flags } = watched;
  // Watched by its real path: chokidar would watch a link to the folder as a link (followSymlinks below).
  const root = realpathSync(folder);
  // Never watched, so that an npm install or a build is not a storm of restarts.
  const build = buildOutput(folder);
  const isIgnored = (path: string) => {
    const parts = relative(root, path).split(sep);
    return parts.includes('node_modules') || parts.includes('.git') || parts[0] === build;
  };
  let child: ChildProcess | undefined;
  // How long the running child may take to stop before it is killed (stopLimit).
  let limit = 0;
  let replacing = false;
  let exiting = false;
  let settle: NodeJS.Timeout | undefined;
  // The files saved since the last restart, and whether each was new in that time.
  const changed = new Map<string, 'added' | 'changed'>();

  // When the running function was started: a file older than that is one it may have read.
  let startedAt = 0;
  const run = () => {
    replacing = false;
    startedAt = Date.now();
    // func.yaml as this start finds it (a save may have changed it), read once here.
    limit = stopLimit(flags, environmentOf(folder));
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
    stop(child, 'SIGTERM');
  };
  /**
   * Sends `signal`, then SIGKILL if the child has not exited within its limit: a function stuck in
   * a synchronous loop (at load, or in a handler) never runs its signal handler, and would hold
   * the next save, or Ctrl-C, forever.
   */
  const stop = (stopping: ChildProcess, signal: NodeJS.Signals) => {
    const kill = setTimeout(() => {
      process.stderr.write(`funcrun: the function did not stop within ${limit / 1000}s of ${signal}: killed (SIGKILL)\n`);
      stopping.kill('SIGKILL');
    }, limit);
    stopping.once('exit', () => clearTimeout(kill));
    stopping.kill(signal);
  };

  let firstSignal: { signal: string; at: number } | undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      // A Ctrl-C reaches this process twice when it runs under npm (npm run dev): from the
      // terminal, and passed on by npm. The echo is the same stop, not a second one (as in serve.ts).
      const now = performance.now();
      if (firstSignal?.signal === signal && now - firstSignal.at < SIGNAL_ECHO_MS) return;
      if (firstSignal !== undefined) {
        // Asked again: no more waiting for the function. Its exit, below, ends this process.
        if (child === undefined) process.exit(EXIT.INCOMPLETE_DRAIN);
        process.stderr.write(`funcrun: ${signal} again: killing the function (SIGKILL)\n`);
        child.kill('SIGKILL');
        return;
      }
      firstSignal = { signal, at: now };
      exiting = true;
      clearTimeout(settle);
      if (child === undefined) process.exit(0);
      // Killed, it has no exit code: its drain was incomplete.
      child.once('exit', (code) => process.exit(code ?? EXIT.INCOMPLETE_DRAIN));
      stop(child, signal);
    });
  }

  // Loaded here, so that serving without --watch never reads it.
  const { watch } = await import('chokidar');
  // Links are not followed: one to a folder outside the function's (a link to /, to a home
  // folder) would be watched whole, which took gigabytes and never got ready. A link inside is
  // watched as a link (re-pointed, it changes), and what it points to inside the folder is
  // watched under its own path anyway; only what links point to outside it is not watched.
  const watcher = watch(root, { ignoreInitial: true, ignored: isIgnored, followSymlinks: false });
  watcher.on('all', (event, path) => {
    // An empty folder made changes nothing; one removed takes its files with it.
    if (exiting || !['add', 'change', 'unlink', 'unlinkDir'].includes(event)) return;
    if (event !== 'unlinkDir' && !SOURCE.test(path)) return;
    const name = relative(root, path);
    // A file that came and went meanwhile (an editor's temp file, renamed over the original) changed nothing.
    if (event === 'unlink' && changed.get(name) === 'added') changed.delete(name);
    else if (!changed.has(name)) changed.set(name, event === 'add' && !olderThan(path, startedAt) ? 'added' : 'changed');
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
 * The function's folder (the path serve is given, or the folder of the file it is given) and the
 * flags; undefined when serve would refuse the command line (a flag, or a value of a flag or a
 * variable: no save can fix them) or find no such path.
 */
function watchedFolder(args: string[]): { folder: string; flags: Partial<Values> } | undefined {
  let positionals: string[];
  let flags: Partial<Values>;
  try {
    let values;
    ({ positionals, values } = parseArgs({ args, options: { ...flagOptions(), 'from-source': { type: 'boolean' } }, allowPositionals: true, strict: true }));
    flags = fromFlags(values);
    fromEnvironment(process.env);
  } catch {
    return undefined;
  }
  const target = resolve(positionals[0] ?? '.');
  try {
    return { folder: statSync(target).isDirectory() ? target : dirname(target), flags };
  } catch {
    return undefined;
  }
}

/**
 * The variables serve will read: this process's, with func.yaml's run.envs where one is not set;
 * undefined when serve will refuse func.yaml (it stops the child at once, and says why).
 */
function environmentOf(folder: string): NodeJS.ProcessEnv | undefined {
  try {
    const env = { ...process.env };
    const funcYaml = readFuncYaml(folder);
    if (funcYaml !== undefined) applyEnvs(funcYaml, env);
    return env;
  } catch {
    return undefined;
  }
}

/**
 * How long a child may take to stop once signalled: serve's stop() gives the requests in flight
 * its grace period, then shutdown() as long again; then KILL_MARGIN_MS. Its grace period as serve
 * reads it: the flag, else the variable (`env`, func.yaml's run.envs included), else the default.
 * (A func.yaml or a variable serve refuses stops the child at once: the default is then as good as any.)
 */
function stopLimit(flags: Partial<Values>, env: NodeJS.ProcessEnv | undefined): number {
  let grace: number = SETTINGS.gracePeriod.default;
  try {
    grace = flags.gracePeriod ?? (env === undefined ? undefined : fromEnvironment(env).gracePeriod) ?? grace;
  } catch {
    grace = flags.gracePeriod ?? grace;
  }
  return 2 * grace + KILL_MARGIN_MS;
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

/**
 * Whether the file at `path` was there before `time` (its inode last changed before then). chokidar
 * may report a file that was already there as added, late, on a busy machine: its removal then is
 * a change the function must see, not a temporary file that came and went.
 */
function olderThan(path: string, time: number): boolean {
  try {
    return statSync(path).ctimeMs < time;
  } catch {
    return false;
  }
}

function listed(paths: string[]): string {
  return paths.length <= 3 ? paths.join(', ') : `${paths.slice(0, 3).join(', ')} and ${paths.length - 3} more`;
}
