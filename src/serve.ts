#!/usr/bin/env node
// `node lib/serve.js [path]` (and `funcrun serve [path]`): serve a function project. An entry
// point: it reads the command line, func.yaml and the logging variables, and sets up signals;
// start() reads the rest of the environment.
import type { Server, ServerResponse } from 'node:http';
import { AsyncResource } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { applyEnvs, ConfigError, parseSwitch, readFuncYaml } from './start/func-yaml';
import { EXIT, unsupportedNode } from './start/exit';
import { explainStartFailure, type StartFailure } from './start/start-failure';
import { usageMessage } from './start/suggest';
import { reportFault } from './lifecycle/faults';
import { LoadError, loadFunction, resolveEntry } from './start/loader';
import { createLogger, prettyDestination, type RootLogger } from './log/log';
import { stop } from './index';
import { launch } from './start/launch';
import { flagHelp, flagOptions, fromEnvironment, fromFlags, SETTINGS, variableOnlySettings, type Values } from './start/settings';
import { exitAfterDrain, loggerOf } from './lifecycle/lifecycle';
import { keepCompiled, RUNTIME } from './boot/code-cache';

/**
 * The same signal again this soon is an echo of the first (see the signal handlers): a parent
 * passes it on within milliseconds; a person pressing Ctrl-C again to stop at once takes longer.
 */
export const SIGNAL_ECHO_MS = 250;

export const USAGE = `Usage: funcrun serve [path] [options]
       node lib/serve.js [path] [options]

Serves the function in path (a project folder or a module file; default: the current folder).

Options (the variable each reads when the flag is not given, and its default, in brackets):
${flagHelp()}
      --watch                 restart when a file of the function changes (funcrun serve only);
                              implies --from-source
      --from-source           run a TypeScript project's src/index.ts even when it is built
                              (Node 22.18 or later); without it the source runs only unbuilt
  -V, --version               print funcrun's version
  -h, --help                  show this help

Other settings (upload limits, timeouts against slow clients, probes, metrics, idempotency) have
variables only, such as FUNC_FILE_SIZE_LIMIT: docs/options.md lists them all.`;

/**
 * Before the server runs, problems go to stderr: a JSON line each, in the format of every other
 * line, or readable text on a terminal and with --pretty (FUNC_LOG_PRETTY).
 */
class StartupReport {
  /** Until the server's own logger exists: warnings and signals before the start. */
  readonly log: RootLogger;

  constructor(readonly readable: boolean) {
    this.log = createLogger('warn', readable ? prettyDestination(process.stderr) : process.stderr);
  }

  /** Says why the start failed, then exits with `code`. Never throws. */
  fail(err: unknown, code: number = EXIT.FAILED): never {
    const failure = explainStartFailure(err);
    try {
      if (this.readable) process.stderr.write(readableFailure(failure));
      else {
        const { message, hint, at, excerpt, stack } = failure;
        this.log.fatal({ ...(stack instanceof Error ? { err: stack } : {}), ...(hint ? { hint } : {}), ...at, ...(excerpt ? { excerpt } : {}) }, message);
      }
    } catch {
      process.stderr.write(`funcrun: ${failure.message}\n`);
    }
    process.exit(code);
  }
}

function readableFailure({ message, hint, excerpt, stack }: StartFailure): string {
  const indent = (text: string) => text.replace(/^/gm, '    ');
  let text = `funcrun: ${message}\n`;
  if (excerpt !== undefined) text += `\n${indent(excerpt)}\n\n`;
  if (hint !== undefined) text += `  ${hint}\n`;
  // The function's own error: its stack says where, below funcrun's line.
  if (stack instanceof Error && typeof stack.stack === 'string') text += `\n${indent(stack.stack)}\n`;
  return text;
}

/** Whether start problems are written as text: on a terminal, or asked for with --pretty or FUNC_LOG_PRETTY. */
function wantsText(argv: string[], env: NodeJS.ProcessEnv): boolean {
  if (argv.includes('--pretty')) return true;
  try {
    if (env.FUNC_LOG_PRETTY !== undefined && env.FUNC_LOG_PRETTY !== '') return parseSwitch(env.FUNC_LOG_PRETTY, 'FUNC_LOG_PRETTY');
  } catch {
    // An invalid value is reported by the settings, with the rest of them.
  }
  return process.stderr.isTTY === true;
}

function parseCommandLine(argv: string[]): { target: string; flags: Partial<Values>; preferSource: boolean } {
  const options = {
    ...flagOptions(),
    'from-source': { type: 'boolean' as const },
    help: { type: 'boolean' as const, short: 'h' },
    version: { type: 'boolean' as const, short: 'V' },
  };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (err) {
    throw new ConfigError(usageMessage(err, [...Object.keys(options), 'watch'], 'funcrun serve --help', variableOnlySettings()));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  // As faas-js-runtime's command answers it (-V, --version), with funcrun's version.
  if (values.version) {
    process.stdout.write(`${(JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version}\n`);
    process.exit(0);
  }
  if (positionals.length > 1) throw new ConfigError(`expected one folder, got ${positionals.length}: ${positionals.join(' ')} (funcrun serve --help)`);
  const { 'from-source': preferSource, help: _help, version: _version, ...settings } = values;
  return { target: positionals[0] ?? '.', flags: fromFlags(settings), preferSource: preferSource === true };
}

/**
 * Exits once stdout has taken the lines written so far (the fatal line of a fault, the last
 * ones of a drain): node queues what a full pipe cannot take, and process.exit() drops the queue.
 * A reader that never catches up gets `limit` ms.
 */
function exitFlushed(code: number, limit: number): void {
  const out = process.stdout;
  if (out.writableLength === 0 || out.destroyed || !out.writable) process.exit(code);
  setTimeout(() => process.exit(code), Math.max(limit, 1000));
  // An empty write's callback runs once everything queued before it is written.
  out.write('', () => process.exit(code));
}

/**
 * Serves the function named by `argv` (the command line after `serve`) until a signal stops it.
 * `command` is the program as it was started: `faas-js-runtime` turns compatibility on.
 */
export async function serve(argv: string[], command?: string): Promise<void> {
  const report: StartupReport = new StartupReport(wantsText(argv, process.env));
  let server: Server | undefined;
  let log: RootLogger = report.log;
  let stopping = false;
  const old = unsupportedNode();
  if (old !== undefined) log.warn(old);

  // Bound now, outside any invocation: a fault's drain and shutdown() must not run in the context
  // of the invocation that crashed (its reqId, trace and OpenTelemetry span).
  const outsideInvocations = AsyncResource.bind((run: () => void) => run());
  const shutdownThen = (code: number, gracePeriod: number) =>
    outsideInvocations(() => {
      if (server === undefined) return exitFlushed(code, gracePeriod);
      exitAfterDrain(server);
      stop(server, gracePeriod).then(
        (drain) => {
          // A fault (during the drain too) decides the exit code: the line says the one it exits with.
          const exitCode = failed ? EXIT.FAILED : drain.complete ? code : EXIT.INCOMPLETE_DRAIN;
          if (drain.complete) log.info('stopped');
          else log.warn({ cut: drain.cut, unfinished: drain.unfinished }, `stopped, but the drain was incomplete: exit code ${exitCode}`);
          exitFlushed(exitCode, gracePeriod);
        },
        // The server has logged shutdown()'s error (or that it did not finish in time) already.
        () => exitFlushed(EXIT.FAILED, gracePeriod),
      );
    });

  // A closed stdout or stderr (`funcrun serve | head`, a log collector gone) must not become an
  // uncaught exception: logging it would fail the same way, forever. The lines are dropped, the
  // function goes on serving, and stderr (while it is open) says so once.
  let dropping = false;
  const closedOutput = (err: NodeJS.ErrnoException) => {
    if (dropping) return;
    dropping = true;
    try {
      process.stderr.write(`funcrun: an output stream failed (${err.code ?? err.message}): log lines are dropped from now on\n`);
    } catch {
      // stderr is gone too.
    }
  };
  process.stdout.on('error', closedOutput);
  process.stderr.on('error', closedOutput);

  let gracePeriod: number = SETTINGS.gracePeriod.default;
  let failed = false;
  // A function's own async code threw (a timer, an unhandled rejection): logged with the invocation
  // it came from, whose request is answered 500 (faults.ts); the others still get the grace
  // period, then shutdown() runs and the process exits 1 so the platform restarts it.
  process.on('uncaughtException', (err, origin) => {
    // A write into a response body funcrun cancelled is no fault: logged, and the process goes on.
    if (!reportFault(err, origin, log)) return;
    failed = true;
    if (stopping) return;
    stopping = true;
    shutdownThen(EXIT.FAILED, gracePeriod);
  });
  // An init() that never settles and holds nothing would otherwise end the process silently, with 0.
  let started = false;
  process.once('beforeExit', () => {
    if (started) return;
    report.fail(new LoadError("the function never finished starting: init() (or the module's top-level await) never settled, and nothing was left to run"));
  });

  // Installed before anything starts, so no signal can find the process without them. Before
  // the server exists a signal simply ends the start.
  let firstSignal: { signal: string; at: number } | undefined;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      // A Ctrl-C reaches the process twice: from the terminal, and from a parent that passes
      // signals on (npm start, funcrun serve --watch). The echo is the same stop, not a second one.
      const now = performance.now();
      if (firstSignal?.signal === signal && now - firstSignal.at < SIGNAL_ECHO_MS) return;
      firstSignal ??= { signal, at: now };
      if (stopping) {
        log.warn(`${signal} again: exiting now, without waiting for the requests in flight (exit code ${EXIT.INCOMPLETE_DRAIN})`);
        process.exit(EXIT.INCOMPLETE_DRAIN);
      }
      stopping = true;
      log.info(`${signal}: draining requests in flight, then running shutdown()`);
      shutdownThen(EXIT.OK, gracePeriod);
    });
  }

  let parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (err) {
    // A wrong command line (an unknown flag, a bad value) is bad use, as for any command.
    report.fail(err, err instanceof ConfigError ? EXIT.USAGE : EXIT.FAILED);
  }
  const { target, flags, preferSource } = parsed;
  let entry;
  let module;
  let misspelled: string[] = [];
  let shapeChosen: string | undefined;
  try {
    // func.yaml's envs are set before the module loads: its top level may read them.
    entry = resolveEntry(target, { preferSource });
    const { folder } = entry;
    const funcYaml = readFuncYaml(folder);
    if (funcYaml !== undefined) applyEnvs(funcYaml, process.env);
    const env = fromEnvironment(process.env);
    gracePeriod = flags.gracePeriod ?? env.gracePeriod ?? gracePeriod;
    const loaded = await loadFunction(entry.file);
    module = loaded.module;
    misspelled = loaded.misspelled;
    shapeChosen = loaded.shapeChosen;
    const pretty = flags.pretty ?? env.pretty ?? SETTINGS.pretty.default;
    // serve's own settings stay here; the rest are start()'s options, from the flags.
    const { gracePeriod: _grace, pretty: _pretty, ...options } = flags;
    // func.yaml as read above: start()'s work without reading it again.
    server = await launch(module, { ...options, config: folder, command, logDestination: pretty ? prettyDestination(process.stdout) : undefined }, funcYaml);
  } catch (err) {
    // A value refused, from a variable or func.yaml as from a flag, is bad use too.
    report.fail(err, err instanceof ConfigError ? EXIT.USAGE : EXIT.FAILED);
  }
  started = true;
  // The bundle's code cache is written once the first answer is sent, when V8 has compiled the
  // way to it too; only when the start found none it could use (code-cache.ts).
  server.once('request', (_req: unknown, res: ServerResponse) => res.once('close', () => setImmediate(keepCompiled, RUNTIME)));
  log = loggerOf(server);
  if (/\.[cm]?ts$/.test(entry.file) && entry.note !== undefined) log.info({ file: entry.file }, `running the TypeScript source: ${entry.note}`);
  else if (entry.note !== undefined) log.warn({ file: entry.file }, entry.note);
  log.debug({ file: entry.file }, 'loaded the function');
  for (const warning of misspelled) log.warn({ file: entry.file }, warning);
  if (shapeChosen !== undefined) log.warn({ file: entry.file }, shapeChosen);
  if (entry.newerSource !== undefined) {
    log.warn({ file: entry.file, source: entry.newerSource }, 'the build is older than the source: serving the build (npm run build, or --from-source)');
  }
}

if (require.main === module) void serve(process.argv.slice(2), process.argv[1]);
