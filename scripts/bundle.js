'use strict';
// npm run bundle (part of npm run build, after tsc): the runtime as a few files. lib/runtime.js holds
// what every function's start needs; each part of the run time that a function may never use is a
// file of its own (ON_DEMAND), loaded the first time a module of the core require()s it. Each
// bundled module's lib/<path>.js is made a one-line re-export of its part of its bundle. So
// whichever way funcrun is entered (node lib/serve.js, require('funcrun'), funcrun/testing, the
// funcrun command) one copy of it runs, and a cold start loads one file of it rather than sixty.
const fs = require('node:fs');
const path = require('node:path');

const SRC = path.join(__dirname, '..', 'src');
const LIB = path.join(__dirname, '..', 'lib');

/** The folders of src/ left out of the bundles, and why: what is in them is not the server's run time. */
const OUTSIDE = {
  tools: "the developer's tools (the funcrun command, funcrun/testing): the server never loads them",
  boot: 'loaded by the entry points before the bundle (compile cache, code caches, source maps): one copy of their state',
};

/**
 * The folders of src/ bundled apart, into lib/runtime-<name>.js, and loaded on first use: a module
 * of the core may only require() them where it needs them (a static import fails the build), so a
 * function whose shape does not use one never loads it (spec/startup-loads.spec.js).
 */
const ON_DEMAND = {
  events: 'event contracts and idempotency: loaded at start by a module that declares `events` or turns idempotency on',
  uploads: 'multipart/form-data: loaded by the first request with such a body',
  xml: 'XML bodies: loaded by the first XML body',
  fetch: 'fetch handlers and web answers: loaded by a module with fetch, or the first Response or web ReadableStream a function returns',
};

/** Dependencies loaded from node_modules, each where it is first needed. */
const EXTERNAL = ['cloudevents', '@xmldom/xmldom', 'ajv', 'ajv-formats', '@fastify/busboy'];

const slashed = (file) => file.split(path.sep).join('/');
const folderOf = (name) => (name.includes('/') ? name.slice(0, name.indexOf('/')) : '');
/** Which bundle a module of src/ is in: '' for the core, an ON_DEMAND name, or undefined outside them. */
function bundleOf(name) {
  const folder = folderOf(name);
  if (Object.hasOwn(OUTSIDE, folder)) return undefined;
  return Object.hasOwn(ON_DEMAND, folder) ? folder : '';
}
const fileOf = (bundle) => (bundle === '' ? 'runtime.js' : `runtime-${bundle}.js`);

/** The bundled modules, by their path in src/ without `.ts`: every source outside the OUTSIDE folders. */
function bundled() {
  return fs
    .readdirSync(SRC, { recursive: true })
    .map(slashed)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => file.slice(0, -'.ts'.length))
    .filter((name) => bundleOf(name) !== undefined)
    .sort();
}

/** The entry esbuild bundles: `modules`, each module's exports by its path. */
function entry(names) {
  const imports = names.map((name, i) => `import * as m${i} from './${name}';`);
  // The public entry (index.ts) turns request scoping on when its `log` or `eventResponse` is read (log/scope.ts).
  const scoping = names.includes('index') ? ["import { withScopingOnUse } from './log/scope';"] : [];
  const members = names.map((name, i) => `  ${JSON.stringify(name)}: ${name === 'index' ? `withScopingOnUse(m${i})` : `m${i}`},`);
  return [...imports, ...scoping, 'export const modules = {', ...members, '};', ''].join('\n');
}

/**
 * What a bundle takes in and what stays an import: boot/, the YAML parser and every module of
 * another bundle stay imports of the built files beside the bundles (a module's lib/<path>.js), so
 * each module has one copy; a static import of an ON_DEMAND module from the core is an error.
 */
function boundaries(own) {
  return {
    name: 'boundaries',
    setup(build) {
      build.onResolve({ filter: /^\.\.?\// }, (args) => {
        const target = slashed(path.relative(SRC, path.resolve(args.resolveDir, args.path))).replace(/\.(js|ts)$/, '');
        if (target.startsWith('..')) return undefined;
        if (target.startsWith('boot/') || target === 'yaml') return { path: `./${target}.js`, external: true };
        const bundle = bundleOf(target);
        if (bundle === undefined || bundle === own) return undefined;
        if (own === '' && args.kind !== 'require-call') {
          const from = slashed(path.relative(SRC, args.importer));
          return {
            errors: [{ text: `${from} imports ${target} statically: it is loaded on demand (scripts/bundle.js ON_DEMAND), so require() it where it is used` }],
          };
        }
        return { path: `./${target}.js`, external: true };
      });
    },
  };
}

async function bundle(own, names) {
  // build(), not buildSync(): plugins run only in the asynchronous API.
  await require('esbuild').build({
    stdin: { contents: entry(names), resolveDir: SRC, sourcefile: '../scripts/bundle.js', loader: 'ts' },
    plugins: [boundaries(own)],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: EXTERNAL,
    outfile: path.join(LIB, fileOf(own)),
    // A map beside each bundle, without the sources' text: the logger reads it for the first stack
    // it maps (boot/source-maps.ts), and a stack needs only the file and line it names.
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  });
}

const SERVE_AS_PROGRAM = `// Run as a program: the compiled code is kept for the next start (boot/compile-cache.ts), before the
// bundle loads, and the stacks funcrun logs name its TypeScript (boot/source-maps.ts); the bundle is
// loaded with its code cache (boot/code-cache.ts).
if (require.main === module) {
  require('./boot/compile-cache.js');
  require('./boot/source-maps.js').mapFuncrunStacks();
  const { requireCached, RUNTIME } = require('./boot/code-cache.js');
  requireCached(RUNTIME);
}
`;

function writeReexports(byBundle) {
  for (const [own, names] of byBundle) {
    const file = fileOf(own);
    const { modules } = require(path.join(LIB, file));
    for (const name of names) {
      // The names, listed the way esbuild annotates its own output, so that ESM's `import { start }
      // from 'funcrun'` finds them (node reads them statically, with cjs-module-lexer).
      const exported = Object.keys(modules[name]).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n));
      const annotation = exported.length ? `0 && (module.exports = { ${exported.join(', ')} });\n` : '';
      const depth = name.split('/').length - 1;
      const relative = depth === 0 ? `./${file}` : `${'../'.repeat(depth)}${file}`;
      const reexport = `module.exports = require('${relative}').modules[${JSON.stringify(name)}];\n${annotation}`;
      const text =
        name === 'serve'
          ? `#!/usr/bin/env node\n'use strict';\n${SERVE_AS_PROGRAM}${reexport}// argv[1] is the command as it was typed (a faas-js-runtime link stays that name).\nif (require.main === module) void module.exports.serve(process.argv.slice(2), process.argv[1]);\n`
          : `'use strict';\n// Generated (scripts/bundle.js): this module lives in lib/${file}.\n${reexport}`;
      fs.mkdirSync(path.dirname(path.join(LIB, name)), { recursive: true });
      fs.writeFileSync(path.join(LIB, `${name}.js`), text);
    }
  }
}

/** Files in lib/ no source builds any more (a module moved or removed): a stale copy would still load. */
function removeStale() {
  const built = new Set(['yaml.js']);
  for (const own of ['', ...Object.keys(ON_DEMAND)]) built.add(fileOf(own)).add(`${fileOf(own)}.map`);
  for (const file of fs.readdirSync(SRC, { recursive: true })) {
    const name = slashed(file);
    if (name.endsWith('.ts') && !name.endsWith('.d.ts')) for (const ext of ['.js', '.d.ts']) built.add(name.slice(0, -3) + ext);
  }
  for (const file of fs.readdirSync(LIB, { recursive: true })) {
    const name = slashed(file);
    if (name === '.cache' || name.startsWith('.cache/') || built.has(name)) continue;
    const full = path.join(LIB, file);
    if (fs.statSync(full).isFile()) fs.rmSync(full);
  }
}

/** The bundled modules by bundle ('' the core), each bundle's in order. */
function byBundle() {
  const groups = new Map([['', []], ...Object.keys(ON_DEMAND).map((name) => [name, []])]);
  for (const name of bundled()) groups.get(bundleOf(name)).push(name);
  for (const [own, names] of groups) if (names.length === 0) groups.delete(own);
  return groups;
}

/** The bundles are ASCII, so that boot/code-cache.ts reads them without UTF-8 decoding: esbuild escapes strings, not regular expressions or kept comments. */
function checkAscii(groups) {
  for (const own of groups.keys()) {
    const text = fs.readFileSync(path.join(LIB, fileOf(own)));
    if (!require('node:buffer').isAscii(text)) {
      const at = text.findIndex((byte) => byte > 0x7f);
      const line = text.subarray(0, at).toString('latin1').split('\n').length;
      throw new Error(`lib/${fileOf(own)}:${line} is not ASCII: write the character as an escape (\\u2026) in its source`);
    }
  }
}

async function main() {
  removeStale();
  const groups = byBundle();
  await Promise.all([...groups].map(([own, names]) => bundle(own, names)));
  checkAscii(groups);
  writeReexports(groups);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err.message);
    process.exitCode = 1;
  });
}

module.exports = { OUTSIDE, ON_DEMAND, bundled, bundleOf, fileOf };
