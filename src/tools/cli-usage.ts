// The funcrun command's words: each command's help text, its options read (node:util parseArgs),
// and the error that is the caller's mistake (a one-line message, exit code 2). No command runs
// here: cli.ts dispatches, cli-invoke.ts and cli-commands.ts run them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { EXIT } from '../start/exit';
import { usageMessage } from '../start/suggest';

type ParseArgsOptions = NonNullable<ParseArgsConfig['options']>;

/** This funcrun's version, from its package.json. */
export const VERSION = (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;

export const USAGE = `Usage: funcrun <command> [options]

Commands:
  create <folder>     write a new function project (--language node|typescript, --template http|cloudevents|fetch)
  invoke              send a request or a CloudEvent to a running function
  config envs ...     add, remove or list run.envs in func.yaml
  config health       set the health endpoints in func.yaml
  serve [path]        serve a function (the same as node lib/serve.js)
  cache               write funcrun's code caches for this node and user (while an image is built)

Run funcrun <command> --help for its options. funcrun --version (or -V, or version) prints the version.`;

export const CREATE_USAGE = `Usage: funcrun create <folder> [--language node|typescript] [--template http|cloudevents|fetch] [--funcrun <spec>]

Writes a function project into folder (created if missing; it must be empty): func.yaml,
package.json, README.md, the function, unit and integration tests, Dockerfile and .dockerignore.
Unless funcrun came from a registry, it is packed into the project (funcrun-<version>.tgz) and
package.json depends on that file, so npm install works where funcrun is not published.

Options:
  -l, --language <l>   node (JavaScript, default) or typescript
  -t, --template <t>   http (default), cloudevents, or fetch (a web-standard fetch(request)
                       handler returning a Response, the shape of Hono and Workers)
      --funcrun <spec> the dependency on funcrun: a version range (^${VERSION}), a file: or other
                       npm specifier, or pack (this copy, packed into the project); default:
                       ^${VERSION} when this funcrun was installed from a registry, else pack
  -h, --help           show this help`;

export const INVOKE_USAGE = `Usage: funcrun invoke [options]

Sends a request to a running function and prints the answer. Exits 1 when the answer's status
is above 299 or the function cannot be reached.

Options:
      --target <url>        where the function runs, query parameters allowed (default http://localhost:8080)
  -d, --data <text>         the body (default {"message":"Hello World"} for POST); with GET, the
                            query string: a=1&b=2, or a JSON object of strings, numbers, booleans
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
      --timeout <t>         how long to wait for the answer: 30s, 2m, 500ms (default 30s; a bare
                            number is milliseconds, as in FUNC_TIMEOUT)
  -h, --help                show this help`;

export const CONFIG_USAGE = `Usage: funcrun config envs add --name <NAME> --value <value> [--path <folder>]
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

export const CACHE_USAGE = `Usage: funcrun cache

Writes funcrun's code caches, and node's compile cache of what funcrun loads, for this node, its
V8 flags and the user running it, in the compile cache's folder (NODE_COMPILE_CACHE, else
funcrun's lib/.cache): a start from them compiles none of funcrun's code. Run it while an image is
built, as the user the function will run as (the Dockerfile of funcrun create does). It serves a
function of its own on loopback, not the project's, and the caches hold code, never settings.
Exits 1 when this user cannot write the folder.

Options:
  -h, --help   show this help`;

// Each command's options, as node:util parseArgs reads them (--help is added to each).

export const CREATE_OPTIONS = {
  language: { type: 'string', short: 'l' },
  template: { type: 'string', short: 't' },
  funcrun: { type: 'string' },
} satisfies ParseArgsOptions;

export const INVOKE_OPTIONS = {
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
} satisfies ParseArgsOptions;

export const CONFIG_OPTIONS = {
  name: { type: 'string' },
  value: { type: 'string' },
  liveness: { type: 'string' },
  readiness: { type: 'string' },
  env: { type: 'boolean' },
  path: { type: 'string' },
} satisfies ParseArgsOptions;

/** The commands, for "did you mean". */
export const COMMANDS = ['create', 'invoke', 'config', 'serve', 'cache', 'help', 'version'];

/** A mistake in how the command was called: a one-line message and exit code 2. */
export class UsageError extends Error {}

/** `args` read by `spec`, and --help; a mistake in them is a UsageError pointing to `command`'s help. */
export function options<T extends ParseArgsOptions>(args: string[], spec: T, allowPositionals: boolean, command: string) {
  try {
    return parseArgs({ args, options: { ...spec, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true, tokens: true });
  } catch (err) {
    throw new UsageError(usageMessage(err, [...Object.keys(spec), 'help'], `funcrun ${command} --help`));
  }
}

/** Prints `text` and exits 0. */
export function help(text: string): never {
  process.stdout.write(text + '\n');
  process.exit(EXIT.OK);
}
