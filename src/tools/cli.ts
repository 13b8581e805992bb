#!/usr/bin/env node
// The `funcrun` command: create, invoke, config, serve and cache. An entry point: it reads the command
// line (node:util parseArgs), and the files and variables its commands name.
// First: the compile cache and source maps, on before anything else of funcrun is loaded, then
// the bundle with its code cache (the calls stay between the imports: compiled to CommonJS, each
// import is a require() in its place).
import '../boot/compile-cache';
import { mapFuncrunStacks } from '../boot/source-maps';
mapFuncrunStacks();
import { requireCached, RUNTIME } from '../boot/code-cache';
requireCached(RUNTIME);
import { accessSync, constants, existsSync, openAsBlob, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, parseDuration, readFuncYaml } from '../start/func-yaml';
import { parseMediaType } from '../body/media-type';
import { EXIT, unsupportedNode } from '../start/exit';
import { nearest, notOneOf, usageMessage } from '../start/suggest';
import { flagOptions } from '../start/settings';
import { describeEnv, listEnvs, openFuncYaml, removeEnv, saveFuncYaml, setEnv, setHealth } from './config-command';
import { createProject, defaultDependency, functionName, type Language, type Template } from './create-command';
import { FILE_CHANGED, invoke } from './invoke-command';
import { serve, USAGE as SERVE_USAGE } from '../serve';
import { watchAndServe } from './watch';
import { writeCaches } from './cache-command';

const VERSION = (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;

const USAGE = `Usage: funcrun <command> [options]

Commands:
  create <folder>     write a new function project (--language node|typescript, --template http|cloudevents)
  invoke              send a request or a CloudEvent to a running function
  config envs ...     add, remove or list run.envs in func.yaml
  config health       set the health endpoints in func.yaml
  serve [path]        serve a function (the same as node lib/serve.js)
  cache               write funcrun's code caches for this node and user (while an image is built)

Run funcrun <command> --help for its options. funcrun --version prints the version.`;

const CREATE_USAGE = `Usage: funcrun create <folder> [--language node|typescript] [--template http|cloudevents]

Writes a function project into folder (created if missing; it must be empty): func.yaml,
package.json, README.md, the function, unit and integration tests, Dockerfile and .dockerignore.
Unless funcrun came from a registry, it is packed into the project (funcrun-<version>.tgz) and
package.json depends on that file, so npm install works where funcrun is not published.

Options:
  -l, --language <l>   node (JavaScript, default) or typescript
  -t, --template <t>   http (default) or cloudevents
      --funcrun <spec> the dependency on funcrun: a version range (^${VERSION}), a file: or other
                       npm specifier, or pack (this copy, packed into the project); default:
                       ^${VERSION} when this funcrun was installed from a registry, else pack
  -h, --help           show this help`;

const INVOKE_USAGE = `Usage: funcrun invoke [options]

Sends a request to a running function and prints the answer. Exits 1 when the answer's status
is above 299 or the function cannot be reached.

Options:
      --target <url>        where the function runs, query parameters allowed (default http://localhost:8080)
  -d, --data <text>         the body (default {"message":"Hello World"} for POST)
      --file <path>         the body, streamed from a file (a path with = in it is written ./a=b)
      --file <f>=<path>     a file in a multipart/form-data body, under field f; repeat for more;
                            its type from a suffix, 'photo=cat.png;type=image/png' (quoted: ; ends
                            a shell command), else application/octet-stream
      --field <f>=<text>    a text field in that form; repeat for more
      --content-type <t>    of the body (default application/json; not with a form)
  -f, --format <f>          http or cloudevent (default: func.yaml's invoke, else http)
      --request-type <m>    GET or POST (default POST)
      --id <id>             CloudEvent id (default a new UUID)
      --source <s>          CloudEvent source (default /funcrun/invoke)
      --type <t>            CloudEvent type (default funcrun.invoke)
  -e, --extension <k=v>     a CloudEvent extension attribute; repeat for more
      --path <folder>       the function project, for func.yaml (default the current folder)
      --timeout <t>         how long to wait for the answer (default 30s)
  -h, --help                show this help`;

const CONFIG_USAGE = `Usage: funcrun config envs add --name <NAME> --value <value> [--path <folder>]
       funcrun config envs remove --name <NAME> [--path <folder>]
       funcrun config envs list [--path <folder>]
       funcrun config health [--liveness </path>] [--readiness </path>] [--env] [--path <folder>]

Edits func.yaml in place, keeping its comments and order. Values funcrun reads are checked:
FUNC_LOG_LEVEL must be a log level, LIVENESS_URL and READINESS_URL paths, and so on.

Options:
      --name <NAME>        the variable
      --value <value>      its value
      --liveness <path>    deploy.healthEndpoints.liveness
      --readiness <path>   deploy.healthEndpoints.readiness
      --env                with health: also set LIVENESS_URL / READINESS_URL in run.envs
      --path <folder>      the function project (default the current folder)
  -h, --help               show this help`;

const CACHE_USAGE = `Usage: funcrun cache

Writes funcrun's code caches, and node's compile cache of what funcrun loads, for this node, its
V8 flags and the user running it, in the compile cache's folder (NODE_COMPILE_CACHE, else
funcrun's lib/.cache): a start from them compiles none of funcrun's code. Run it while an image is
built, as the user the function will run as (the Dockerfile of funcrun create does). It serves a
function of its own on loopback, not the project's, and the caches hold code, never settings.
Exits 1 when this user cannot write the folder.

Options:
  -h, --help   show this help`;

/** A mistake in how the command was called: a one-line message and exit code 2. */
class UsageError extends Error {}

function options<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], spec: T, allowPositionals: boolean, command: string) {
  try {
    return parseArgs({ args, options: { ...spec, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true, tokens: true });
  } catch (err) {
    throw new UsageError(usageMessage(err, [...Object.keys(spec), 'help'], `funcrun ${command} --help`));
  }
}

function help(text: string): never {
  process.stdout.write(text + '\n');
  process.exit(EXIT.OK);
}

function create(args: string[]): void {
  const { values, positionals } = options(
    args,
    { language: { type: 'string', short: 'l' }, template: { type: 'string', short: 't' }, funcrun: { type: 'string' } },
    true,
    'create',
  );
  if (values.help) help(CREATE_USAGE);
  if (positionals.length !== 1) throw new UsageError('create takes one folder: funcrun create <folder>');
  const language = (values.language ?? 'node') as string;
  const template = (values.template ?? 'http') as string;
  const funcrun = (values.funcrun ?? defaultDependency()) as string;
  if (language !== 'node' && language !== 'typescript') throw new UsageError(notOneOf('--language', language, ['node', 'typescript']));
  if (template !== 'http' && template !== 'cloudevents') throw new UsageError(notOneOf('--template', template, ['http', 'cloudevents']));
  if (funcrun.trim() === '') throw new UsageError('--funcrun is empty: give a version range, an npm specifier or pack');
  const folder = resolve(positionals[0]);
  const files = createProject(folder, { language: language as Language, template: template as Template, funcrun });
  const kind = `${template === 'http' ? 'an HTTP' : 'a CloudEvent'} function in ${language === 'node' ? 'JavaScript' : 'TypeScript'}`;
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

async function invokeCommand(args: string[]): Promise<void> {
  const { values, positionals, tokens } = options(
    args,
    {
      target: { type: 'string' },
      data: { type: 'string', short: 'd' },
      file: { type: 'string', multiple: true },
      field: { type: 'string', multiple: true },
      'content-type': { type: 'string' },
      format: { type: 'string', short: 'f' },
      'request-type': { type: 'string' },
      id: { type: 'string' },
      source: { type: 'string' },
      type: { type: 'string' },
      extension: { type: 'string', short: 'e', multiple: true },
      path: { type: 'string' },
      timeout: { type: 'string' },
    },
    false,
    'invoke',
  );
  if (values.help) help(INVOKE_USAGE);
  if (positionals.length > 0) throw new UsageError(`invoke takes no arguments, got ${positionals.join(' ')}`);
  const method = ((values['request-type'] as string | undefined) ?? 'POST').toUpperCase();
  if (method !== 'GET' && method !== 'POST') throw new UsageError(notOneOf('--request-type', method, ['GET', 'POST']));
  const funcYaml = existsSync(join(resolve((values.path as string | undefined) ?? '.'), 'func.yaml'))
    ? readFuncYaml(resolve((values.path as string | undefined) ?? '.'))
    : undefined;
  const format = (values.format as string | undefined) ?? (funcYaml?.invoke === 'cloudevent' ? 'cloudevent' : 'http');
  if (format !== 'http' && format !== 'cloudevent') throw new UsageError(notOneOf('--format', format, ['http', 'cloudevent']));
  const extensions: Record<string, string> = {};
  for (const pair of (values.extension as string[] | undefined) ?? []) {
    const m = /^([a-z0-9]+)=(.*)$/s.exec(pair);
    if (m === null) throw new UsageError(`invalid --extension '${pair}': expected name=value, the name in a-z and 0-9`);
    extensions[m[1]] = headerValue('--extension', m[2], pair);
  }
  for (const option of ['id', 'source', 'type', 'content-type'] as const) {
    if (values[option] !== undefined) headerValue(`--${option}`, values[option] as string);
  }
  const target = (values.target as string | undefined) ?? 'http://localhost:8080';
  if (!URL.canParse(target) || !/^https?:$/.test(new URL(target).protocol)) {
    // Not echoed when it may hold credentials (user:password@).
    throw new UsageError(`invalid --target${target.includes('@') ? '' : ` '${target}'`}: expected a URL such as http://localhost:8080`);
  }
  let timeout: number;
  try {
    timeout = parseDuration((values.timeout as string | undefined) ?? '30s', '--timeout');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  // --file and --field in the order given: a form's parts keep the command line's order, as curl's -F do.
  const given = (tokens ?? []).flatMap((t) =>
    t.kind === 'option' && (t.name === 'file' || t.name === 'field') && t.value !== undefined ? [{ name: t.name, value: t.value }] : [],
  );
  const contentType = values['content-type'] as string | undefined;
  const data = await invokeBody(given, values.data as string | undefined, contentType, method);
  // Node 24's fetch (undici 7) leaves the read error of a file that changed while it was sent as
  // an unhandled rejection, rather than failing the request: without this, a stack trace.
  if (data instanceof FormData) process.on('unhandledRejection', fileChanged);
  const result = await invoke({
    target,
    format,
    method,
    data,
    contentType: contentType ?? 'application/json',
    id: values.id as string | undefined,
    source: (values.source as string | undefined) ?? '/funcrun/invoke',
    type: (values.type as string | undefined) ?? 'funcrun.invoke',
    extensions,
    timeout,
  });
  process.stdout.write(result.text + '\n');
  if (!result.ok) {
    process.stderr.write(`funcrun: the function answered ${result.status}\n`);
    process.exit(EXIT.FAILED);
  }
}

/**
 * `value`, sent in a header: one that holds CR or LF is refused as bad use, rather than failing
 * as the request is made (no header can carry them, nor an event attribute's once decoded; a
 * command line cannot hold NUL). --content-type is sent as it is, so it must be Latin-1 too; an
 * event's attributes are percent-encoded beyond printable ASCII (invoke.ts).
 */
function headerValue(option: string, value: string, given = value): string {
  if (/[\r\n]/.test(value)) throw new UsageError(`invalid ${option} ${JSON.stringify(given)}: a header value cannot hold CR or LF`);
  if (option === '--content-type' && /[^\u0000-\u00ff]/.test(value))
    throw new UsageError(`invalid ${option} ${JSON.stringify(given)}: a header value holds Latin-1 characters only`);
  return value;
}

/** A form's file changed on disk while it was sent: one line and exit code 1; any other rejection is left to crash. */
function fileChanged(err: unknown): void {
  if (!(err instanceof DOMException && err.name === 'NotReadableError')) throw err;
  process.stderr.write(`funcrun: ${FILE_CHANGED}\n`);
  process.exit(EXIT.FAILED);
}

/** A part of a form: a file (`--file field=path`) or a text field (`--field name=value`); `option` as it was given. */
type FormFile = { option: string; field: string; path: string; type: string };
type FormPart = FormFile | { option: string; field: string; value: string };

/**
 * What invoke sends: --data, the bytes of --file <path>, or a multipart form of
 * --file <field>=<path> and --field <name>=<value> (`given`, in command-line order). Every file is
 * checked here, before anything is sent.
 */
async function invokeBody(given: { name: string; value: string }[], data: string | undefined, contentType: string | undefined, method: string) {
  const bodyFiles: string[] = [];
  const parts: FormPart[] = [];
  for (const { name, value } of given) {
    const part = name === 'field' ? formField(value) : formFile(value);
    if (part === undefined) bodyFiles.push(value);
    else parts.push(part);
  }
  const form = parts[0]?.option;
  if (bodyFiles.length > 1)
    throw new UsageError(`give one --file <path> as the body, not ${bodyFiles.length}; the files of a form are named --file <field>=<path>`);
  if (bodyFiles.length === 1 && form !== undefined)
    throw new UsageError(`--file ${bodyFiles[0]} is the body and ${form} makes a form: give one or the other (a path with = in it is written ./a=b)`);
  if (data !== undefined && bodyFiles.length === 1) throw new UsageError('give --data or --file, not both');
  if (data !== undefined && form !== undefined) throw new UsageError(`give --data or a form (${form}), not both`);
  if (form !== undefined) return formBody(parts, contentType, method);
  if (bodyFiles.length === 1) {
    const path = bodyFiles[0];
    try {
      // Streamed as it is sent (invoke.ts): checked now, so that nothing is sent for a file that cannot be.
      const stats = statSync(path);
      if (stats.isDirectory()) throw Object.assign(new Error('a folder'), { code: 'EISDIR' });
      accessSync(path, constants.R_OK);
      return { path, regular: stats.isFile() };
    } catch (err) {
      throw new UsageError(`cannot read --file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  return data ?? (method === 'POST' ? '{"message":"Hello World"}' : undefined);
}

/**
 * `--file field=path[;type=t]`: a file of a form when the text before the first `=` is a field
 * name (not empty, no `/`); undefined when the whole value is a path, the body's.
 */
function formFile(value: string): FormFile | undefined {
  const equals = value.indexOf('=');
  const field = value.slice(0, equals);
  if (equals <= 0 || field.includes('/')) return undefined;
  let path = value.slice(equals + 1);
  // The type is the one given, as curl's -F takes it, never guessed from the name.
  let type = 'application/octet-stream';
  const suffix = path.lastIndexOf(';type=');
  if (suffix !== -1) {
    type = path.slice(suffix + ';type='.length);
    path = path.slice(0, suffix);
    // Blob drops a type outside printable ASCII: refused here rather than sent as another.
    if (parseMediaType(type) === undefined || /[^\x20-\x7e]/.test(type))
      throw new UsageError(`invalid type in --file ${value}: expected a media type such as image/png`);
  }
  return { option: `--file ${value}`, field, path, type };
}

function formField(value: string): FormPart {
  const equals = value.indexOf('=');
  if (equals <= 0) throw new UsageError(`invalid --field '${value}': expected name=value`);
  return { option: `--field ${value}`, field: value.slice(0, equals), value: value.slice(equals + 1) };
}

async function formBody(parts: FormPart[], contentType: string | undefined, method: string): Promise<FormData> {
  const form = parts[0].option;
  if (contentType !== undefined)
    throw new UsageError(
      `--content-type does not go with a form (${form}): it is multipart/form-data with a boundary of its own; a file's type is --file <field>=<path>;type=<type>`,
    );
  if (method !== 'POST') throw new UsageError(`a form (${form}) is sent with POST, not --request-type ${method}`);
  const body = new FormData();
  for (const part of parts) {
    if ('value' in part) body.append(part.field, part.value);
    else body.append(part.field, await fileBlob(part), basename(part.path));
  }
  return body;
}

/** A file of a form as a Blob: fetch streams it from disk as it sends, and again on a 307 or 308. */
async function fileBlob(part: FormFile): Promise<Blob> {
  try {
    // A pipe or a device has no size to send by; only regular files go in a form.
    if (!statSync(part.path).isFile()) throw new Error('not a regular file');
    accessSync(part.path, constants.R_OK);
    return await openAsBlob(part.path, { type: part.type });
  } catch (err) {
    throw new UsageError(`cannot read ${part.option}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function config(args: string[]): void {
  const [area, action] = args;
  const rest = args.slice(area === 'envs' ? 2 : 1);
  const { values, positionals } = options(
    rest,
    {
      name: { type: 'string' },
      value: { type: 'string' },
      liveness: { type: 'string' },
      readiness: { type: 'string' },
      env: { type: 'boolean' },
      path: { type: 'string' },
    },
    false,
    'config',
  );
  if (values.help || area === '--help' || area === '-h') help(CONFIG_USAGE);
  if (positionals.length > 0) throw new UsageError(`unexpected ${positionals.join(' ')}`);
  const folder = resolve((values.path as string | undefined) ?? '.');
  if (area === 'envs') {
    const name = values.name as string | undefined;
    if (action === 'list') {
      const file = openFuncYaml(folder);
      for (const entry of listEnvs(file.doc)) process.stdout.write(`${describeEnv(entry)}\n`);
      return;
    }
    if (action !== 'add' && action !== 'remove') throw new UsageError(notOneOf('config envs action', action ?? '', ['add', 'remove', 'list']));
    if (name === undefined) throw new UsageError(`config envs ${action} needs --name`);
    const file = openFuncYaml(folder);
    if (action === 'add') {
      if (values.value === undefined) throw new UsageError('config envs add needs --value');
      const done = refusedAsUsage(() => setEnv(file.doc, name, values.value as string));
      saveFuncYaml(file);
      process.stdout.write(`${done} ${name} in ${file.file}\n`);
    } else {
      removeEnv(file.doc, name);
      saveFuncYaml(file);
      process.stdout.write(`removed ${name} from ${file.file}\n`);
    }
    return;
  }
  if (area === 'health') {
    if (values.liveness === undefined && values.readiness === undefined) throw new UsageError('config health needs --liveness, --readiness or both');
    const file = openFuncYaml(folder);
    refusedAsUsage(() =>
      setHealth(file.doc, { liveness: values.liveness as string | undefined, readiness: values.readiness as string | undefined }, values.env === true),
    );
    saveFuncYaml(file);
    process.stdout.write(`set the health endpoints in ${file.file}\n`);
    return;
  }
  throw new UsageError(notOneOf('config', area ?? '', ['envs', 'health']));
}

/** A value the server would refuse at start is the command line's mistake: bad use, exit code 2. */
function refusedAsUsage<T>(write: () => T): T {
  try {
    return write();
  } catch (err) {
    throw err instanceof ConfigError ? new UsageError(err.message) : err;
  }
}

async function cacheCommand(args: string[]): Promise<void> {
  const { values } = options(args, {}, false, 'cache');
  if (values.help) help(CACHE_USAGE);
  const folder = await writeCaches();
  process.stdout.write(`funcrun: the code caches are in ${folder}\n`);
}

async function serveCommand(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) help(SERVE_USAGE);
  if (!args.includes('--watch')) return serve(args);
  return watchAndServe(args.filter((a) => a !== '--watch'));
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  // serve warns in its own log's format.
  const old = command === 'serve' ? undefined : unsupportedNode();
  if (old !== undefined) process.stderr.write(`funcrun: warning: ${old}\n`);
  switch (command) {
    case 'create':
      return create(rest);
    case 'invoke':
      return invokeCommand(rest);
    case 'config':
      return config(rest);
    case 'serve':
      return serveCommand(rest);
    case 'cache':
      return cacheCommand(rest);
    case '--version':
    case '-v':
      process.stdout.write(`${VERSION}\n`);
      return;
    case '--help':
    case '-h':
    case 'help':
      return help(USAGE);
    case undefined:
      process.stderr.write(USAGE + '\n');
      process.exit(EXIT.USAGE);
  }
  // `funcrun <folder>`, as the binary was first used: serve it.
  if (existsSync(command)) return serveCommand(argv);
  // An option of serve's before any command (`funcrun --port 8080`): serve is what was meant.
  const option = command.startsWith('-') ? nearest(command.replace(/^-+/, ''), Object.keys(flagOptions()), { prefixes: true }) : undefined;
  if (option !== undefined)
    throw new UsageError(`unknown command '${command}': did you mean funcrun serve --${option}? (funcrun serve --help lists the options)`);
  const meant = nearest(command.replace(/^-+/, ''), COMMANDS, { prefixes: true });
  throw new UsageError(`unknown command '${command}'${meant === undefined ? '' : `: did you mean ${meant}?`} (funcrun --help lists the commands)`);
}

const COMMANDS = ['create', 'invoke', 'config', 'serve', 'cache', 'help', 'version'];

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`funcrun: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof UsageError ? EXIT.USAGE : EXIT.FAILED);
});
