// A new project's files, by the function contract's layouts (JavaScript or TypeScript, HTTP or
// CloudEvents) or as a web-standard fetch handler: func.yaml, package.json, the README, the deploy
// files funcrun ships, and the function with its tests (javascript.ts, typescript.ts). Text only:
// create-command.ts writes it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { javascriptFiles } from './javascript';
import { typescriptFiles } from './typescript';

export type Language = 'node' | 'typescript';
export type Template = 'http' | 'cloudevents' | 'fetch';

export interface ProjectOptions {
  language: Language;
  template: Template;
  /** The dependency on funcrun, as package.json gives it: a version range or any other npm specifier. */
  funcrun: string;
}

// The image build files, copied from the ones funcrun ships (this file is lib/tools/templates/ in
// the package), so the project builds with `docker build .`.
const DEPLOY = join(__dirname, '..', '..', '..', 'examples', 'deploy');
const DEPLOY_FILES = ['Dockerfile', '.dockerignore'];

/** The project's files by path. `created` is func.yaml's creation time. */
export function projectFiles(name: string, { language, template, funcrun }: ProjectOptions, created = new Date()): Record<string, string> {
  const events = template === 'cloudevents';
  const ts = language === 'typescript';
  const files: Record<string, string> = {
    'func.yaml': funcYaml(name, language, events, created),
    'package.json': packageJson(name, ts, funcrun),
    'README.md': readme(name, ts, template, funcrun),
    '.gitignore': ts ? 'node_modules/\nbuild/\n' : 'node_modules/\n',
  };
  for (const file of DEPLOY_FILES) files[file] = readFileSync(join(DEPLOY, file), 'utf8');
  return { ...files, ...(ts ? typescriptFiles(name, template) : javascriptFiles(name, template)) };
}

// What Knative func writes at the top of a new func.yaml. Its schema requires specVersion, the
// version of func's last migration (a file below it is migrated as func reads it), and created
// (without it a function is "not initialized" to func). The schema link is to the commit whose
// schema spec/peers keeps and the specs check every func.yaml against.
const SPEC_VERSION = '0.36.0';
const SCHEMA = 'https://raw.githubusercontent.com/knative/func/c18d6045a1b0cb6c2b411f03082ab9ed20ba90b3/schema/func_yaml-schema.json';

// A name YAML would read as another type (`0x1f` is 31, `123`, `true`, `null`) is quoted: it is
// the function's name, and the source of the events it answers with.
function yamlText(value: string): string {
  return /^[a-z][a-z0-9-]*$/.test(value) && !['true', 'false', 'null', 'yes', 'no', 'on', 'off', 'y', 'n'].includes(value) ? value : `'${value}'`;
}

function funcYaml(name: string, language: Language, events: boolean, created: Date): string {
  return `# $schema: ${SCHEMA}
# yaml-language-server: $schema=${SCHEMA}
# The function's configuration, as Knative func reads it: funcrun reads run.envs and deploy.healthEndpoints.
specVersion: ${SPEC_VERSION}
name: ${yamlText(name)}
runtime: ${language}
created: ${created.toISOString()}
invoke: ${events ? 'cloudevent' : 'http'}
run:
  envs:
    # fatal, error, warn, info, debug, trace or silent: funcrun config envs add --name FUNC_LOG_LEVEL --value debug
    - name: FUNC_LOG_LEVEL
      value: info
deploy:
  healthEndpoints:
    liveness: /health/liveness
    readiness: /health/readiness
`;
}

// The TypeScript projects' dev tools; funcrun's own development uses the same ranges.
const TYPESCRIPT_TOOLS = { '@types/node': '^22.18.0', typescript: '~5.9.3' };

function packageJson(name: string, ts: boolean, funcrun: string): string {
  const manifest = {
    name,
    version: '0.1.0',
    private: true,
    // TypeScript projects are ES modules: node runs src/*.ts as they are, and tsc builds the same.
    ...(ts ? { type: 'module' } : {}),
    main: ts ? 'build/index.js' : 'index.js',
    scripts: ts
      ? {
          start: 'funcrun serve .',
          dev: 'funcrun serve --watch .',
          test: 'node --test test/*.ts',
          typecheck: 'tsc --noEmit',
          build: 'tsc -p tsconfig.build.json',
        }
      : { start: 'funcrun serve .', dev: 'funcrun serve --watch .', test: 'node --test test/*.js' },
    dependencies: { funcrun },
    ...(ts ? { devDependencies: TYPESCRIPT_TOOLS } : {}),
    // Type stripping, which runs the TypeScript source without a build, is on from 22.18.
    engines: { node: ts ? '>=22.18' : '>=22' },
  };
  return JSON.stringify(manifest, null, 2) + '\n';
}

function readme(name: string, ts: boolean, template: Template, funcrun: string): string {
  const events = template === 'cloudevents';
  const fetch = template === 'fetch';
  const call = events
    ? `npx funcrun invoke --format cloudevent --type dev.example.${name} --data '{"message": "hello"}'`
    : `curl -H 'content-type: application/json' -d '{"message": "hello"}' http://localhost:8080/`;
  const tarball = funcrun.startsWith('file:') && funcrun.endsWith('.tgz') ? funcrun.slice('file:'.length) : undefined;
  const what = events ? 'A CloudEvent function' : fetch ? 'A web-standard (fetch) handler' : 'An HTTP function';
  const edit = fetch
    ? 'Edit `fetch`: it takes a web `Request` and returns a `Response`, for every path and method\n  but the probes (a Hono app exported as it is is served the same way).'
    : 'Edit `handle`.';
  const unit = fetch ? '`fetch` with a `Request` and a `createFetchContext()`' : '`handle` with a context';
  return `# ${name}

${what} in ${ts ? 'TypeScript' : 'JavaScript'}, served by funcrun.

\`\`\`sh
npm install
npm test                  # unit and integration tests${ts ? ', run from the TypeScript source' : ''}
npm start                 # serves on http://localhost:8080 (PORT to change it)
${call}
npm run dev               # the same, restarting when a file changes
docker build -t ${name} . && docker run --rm -p 8080:8080 ${name}
\`\`\`

- \`${ts ? 'src/index.ts' : 'index.js'}\`: the function. ${edit}
- \`func.yaml\`: \`run.envs\` (such as \`FUNC_LOG_LEVEL\`) and the health endpoints; edit it with
  \`npx funcrun config envs add --name NAME --value VALUE\` and \`npx funcrun config health\`.
- \`test/unit.${ts ? 'ts' : 'js'}\` calls ${unit} from \`funcrun/testing\`;
  \`test/integration.${ts ? 'ts' : 'js'}\` serves the function on a free port and calls it over HTTP.
${
  ts
    ? `- No build step while developing: Node 22.18 and later run \`src/*.ts\` as they are (type
  stripping: types, no enums or namespaces; relative imports name the \`.ts\` file).
  \`npm run typecheck\` checks the types of the function and its tests (\`tsconfig.json\`);
  \`npm run build\` compiles the function alone, \`src/\` into \`build/\`
  (\`tsconfig.build.json\`), which \`npm start\` then serves, as the image does (funcrun warns
  when the source is newer).
`
    : ''
}- \`Dockerfile\`, \`.dockerignore\`: the image, as funcrun ships them; non-root, production
  dependencies only. A Knative \`Service\` like funcrun's \`examples/deploy/service.yaml\` runs it;
  its probes use the paths in func.yaml.
${
  tarball === undefined
    ? ''
    : `- \`${tarball}\`: funcrun itself, packed into the project because it was not installed from
  a registry; commit it with the project (the image build uses it). Once funcrun is on your
  registry, \`npm install funcrun@latest\` replaces it with a version range; delete the file then.
`
}`;
}
