// The runners of `funcrun create`, `config`, `cache` and `serve`: each reads its options and hands
// the work to its module (create-command.ts, config-command.ts, cache-command.ts, serve.ts, watch.ts).
import { resolve } from 'node:path';
import { ConfigError } from '../start/func-yaml';
import { notOneOf } from '../start/suggest';
import { serve, USAGE as SERVE_USAGE } from '../serve';
import { writeCaches } from './cache-command';
import { CACHE_USAGE, CONFIG_OPTIONS, CONFIG_USAGE, CREATE_OPTIONS, CREATE_USAGE, help, options, UsageError } from './cli-usage';
import { describeEnv, listEnvs, openFuncYaml, removeEnv, saveFuncYaml, setEnv, setHealth } from './config-command';
import { createProject, defaultDependency, functionName, type Language, type Template } from './create-command';
import { watchAndServe } from './watch';

export function create(args: string[]): void {
  const { values, positionals } = options(args, CREATE_OPTIONS, true, 'create');
  if (values.help) help(CREATE_USAGE);
  if (positionals.length !== 1) throw new UsageError('create takes one folder: funcrun create <folder>');
  const language = (values.language ?? 'node') as string;
  const template = (values.template ?? 'http') as string;
  const funcrun = (values.funcrun ?? defaultDependency()) as string;
  if (language !== 'node' && language !== 'typescript') throw new UsageError(notOneOf('--language', language, ['node', 'typescript']));
  if (template !== 'http' && template !== 'cloudevents' && template !== 'fetch')
    throw new UsageError(notOneOf('--template', template, ['http', 'cloudevents', 'fetch']));
  if (funcrun.trim() === '') throw new UsageError('--funcrun is empty: give a version range, an npm specifier or pack');
  const folder = resolve(positionals[0]);
  const files = createProject(folder, { language: language as Language, template: template as Template, funcrun });
  const what = { http: 'an HTTP function', cloudevents: 'a CloudEvent function', fetch: 'a web-standard (fetch) handler' }[template];
  const kind = `${what} in ${language === 'node' ? 'JavaScript' : 'TypeScript'}`;
  process.stdout.write(
    `Created ${kind} in ${folder}:\n${files.map((f) => `  ${f}`).join('\n')}\n` +
      `Next: cd ${shellWord(positionals[0])} && npm install && npm test && npm start\n` +
      `Then, for an image: docker build -t ${functionName(folder)} .\n`,
  );
}

/** `word` as one shell word, for a command line the user copies. */
function shellWord(word: string): string {
  // A leading dash would be read as an option of cd.
  const path = word.startsWith('-') ? `./${word}` : word;
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}

type ConfigValues = { name?: string; value?: string; liveness?: string; readiness?: string; env?: boolean };

export function config(args: string[]): void {
  // --help wherever it is: `config envs --help` asks as `config --help` does.
  if (args.includes('--help') || args.includes('-h')) help(CONFIG_USAGE);
  const [area, action] = args;
  const rest = args.slice(area === 'envs' ? 2 : 1);
  const { values, positionals } = options(rest, CONFIG_OPTIONS, false, 'config');
  if (positionals.length > 0) throw new UsageError(`unexpected ${positionals.join(' ')}`);
  const folder = resolve((values.path as string | undefined) ?? '.');
  if (area === 'envs') return configEnvs(action, values, folder);
  if (area === 'health') return configHealth(values, folder);
  throw new UsageError(notOneOf('config', area ?? '', ['envs', 'health']));
}

/** `funcrun config envs add|remove|list`. */
function configEnvs(action: string | undefined, values: ConfigValues, folder: string): void {
  const name = values.name;
  if (action === 'list') {
    const file = openFuncYaml(folder);
    for (const entry of listEnvs(file.doc)) process.stdout.write(`${describeEnv(entry)}\n`);
    return;
  }
  if (action !== 'add' && action !== 'remove') throw new UsageError(notOneOf('config envs action', action ?? '', ['add', 'remove', 'list']));
  if (name === undefined) throw new UsageError(`config envs ${action} needs --name`);
  const file = openFuncYaml(folder);
  if (action === 'add') {
    const value = values.value;
    if (value === undefined) throw new UsageError('config envs add needs --value');
    const done = refusedAsUsage(() => setEnv(file.doc, name, value));
    saveFuncYaml(file);
    process.stdout.write(`${done} ${name} in ${file.file}\n`);
  } else {
    removeEnv(file.doc, name);
    saveFuncYaml(file);
    process.stdout.write(`removed ${name} from ${file.file}\n`);
  }
}

/** `funcrun config health`. */
function configHealth(values: ConfigValues, folder: string): void {
  if (values.liveness === undefined && values.readiness === undefined) throw new UsageError('config health needs --liveness, --readiness or both');
  const file = openFuncYaml(folder);
  refusedAsUsage(() => setHealth(file.doc, { liveness: values.liveness, readiness: values.readiness }, values.env === true));
  saveFuncYaml(file);
  process.stdout.write(`set the health endpoints in ${file.file}\n`);
}

/** A value the server would refuse at start is the command line's mistake: bad use, exit code 2. */
function refusedAsUsage<T>(write: () => T): T {
  try {
    return write();
  } catch (err) {
    throw err instanceof ConfigError ? new UsageError(err.message) : err;
  }
}

export async function cacheCommand(args: string[]): Promise<void> {
  const { values } = options(args, {}, false, 'cache');
  if (values.help) help(CACHE_USAGE);
  const folder = await writeCaches(process.cwd());
  process.stdout.write(`funcrun: the code caches are in ${folder}\n`);
}

export async function serveCommand(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) help(SERVE_USAGE);
  if (!args.includes('--watch')) return serve(args);
  return watchAndServe(args.filter((a) => a !== '--watch'));
}
