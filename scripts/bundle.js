'use strict';
// npm run bundle (part of npm run build, after tsc): the whole runtime as one file, lib/runtime.js,
// with its source map, and each bundled module's lib/<path>.js made a one-line re-export of its part
// of it. So whichever way funcrun is entered (node lib/serve.js, require('funcrun'), funcrun/testing,
// the funcrun command) one copy of it runs, and a cold start loads one file rather than thirty.
// The bundle's entry is written here, from src/: every module but those in the folders OUTSIDE names.
const fs = require('node:fs');
const path = require('node:path');

const SRC = path.join(__dirname, '..', 'src');
const LIB = path.join(__dirname, '..', 'lib');

/** The folders of src/ left out of the bundle, and why: what is in them is not the server's run time. */
const OUTSIDE = {
  tools: "the developer's tools (the funcrun command, funcrun/testing): the server never loads them",
  boot: 'loaded by the entry points before the bundle (compile cache, code caches, source maps): one copy of their state',
};

/** The bundled modules, by their path in src/ without `.ts`: every source outside the OUTSIDE folders. */
function bundled() {
  return fs
    .readdirSync(SRC, { recursive: true })
    .map((file) => file.split(path.sep).join('/'))
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .filter((file) => !Object.hasOwn(OUTSIDE, file.split('/')[0]) || !file.includes('/'))
    .map((file) => file.slice(0, -'.ts'.length))
    .sort();
}

/** The entry esbuild bundles: `modules`, each module's exports by its path. */
function entry(names) {
  const imports = names.map((name, i) => `import * as m${i} from './${name}';`);
  // The public entry (index.ts) turns request scoping on when its `log` is read (log/scope.ts).
  const members = names.map((name, i) => `  ${JSON.stringify(name)}: ${name === 'index' ? `withScopingOnLog(m${i})` : `m${i}`},`);
  return [...imports, "import { withScopingOnLog } from './log/scope';", 'export const modules = {', ...members, '};', ''].join('\n');
}

/** Imports of boot/ and of the YAML parser stay imports, of the built files beside the bundle. */
const outsideTheBundle = {
  name: 'outside-the-bundle',
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      const target = path.relative(SRC, path.resolve(args.resolveDir, args.path)).split(path.sep).join('/');
      if (target.startsWith('boot/') || target === 'yaml') return { path: `./${target}.js`, external: true };
      return undefined;
    });
  },
};

async function bundle(names) {
  // build(), not buildSync(): plugins run only in the asynchronous API.
  await require('esbuild').build({
    stdin: { contents: entry(names), resolveDir: SRC, sourcefile: '../scripts/bundle.js', loader: 'ts' },
    plugins: [outsideTheBundle],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // Loaded from node_modules; boot/ and lib/yaml.js (bundled on its own, loaded only when there is
    // a func.yaml) by outsideTheBundle.
    external: ['cloudevents', '@xmldom/xmldom', 'ajv', 'ajv-formats', '@fastify/busboy'],
    outfile: path.join(LIB, 'runtime.js'),
    // A map beside the bundle, without the sources' text: the logger reads it for the first stack it
    // maps (source-maps.ts), and a stack needs only the file and line it names.
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

function writeReexports(names) {
  const { modules } = require(path.join(LIB, 'runtime.js'));
  for (const name of names) {
    // The names, listed the way esbuild annotates its own output, so that ESM's `import { start }
    // from 'funcrun'` finds them (node reads them statically, with cjs-module-lexer).
    const exported = Object.keys(modules[name]).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n));
    const annotation = exported.length ? `0 && (module.exports = { ${exported.join(', ')} });\n` : '';
    const depth = name.split('/').length - 1;
    const runtime = depth === 0 ? './runtime.js' : `${'../'.repeat(depth)}runtime.js`;
    const reexport = `module.exports = require('${runtime}').modules[${JSON.stringify(name)}];\n${annotation}`;
    const text =
      name === 'serve'
        ? `#!/usr/bin/env node\n'use strict';\n${SERVE_AS_PROGRAM}${reexport}// argv[1] is the command as it was typed (a faas-js-runtime link stays that name).\nif (require.main === module) void module.exports.serve(process.argv.slice(2), process.argv[1]);\n`
        : `'use strict';\n// Generated (scripts/bundle.js): this module lives in lib/runtime.js.\n${reexport}`;
    fs.mkdirSync(path.dirname(path.join(LIB, name)), { recursive: true });
    fs.writeFileSync(path.join(LIB, `${name}.js`), text);
  }
}

/** Files in lib/ no source builds any more (a module moved or removed): a stale copy would still load. */
function removeStale() {
  const built = new Set(['runtime.js', 'runtime.js.map', 'yaml.js']);
  for (const file of fs.readdirSync(SRC, { recursive: true })) {
    const name = file.split(path.sep).join('/');
    if (name.endsWith('.ts') && !name.endsWith('.d.ts')) for (const ext of ['.js', '.d.ts']) built.add(name.slice(0, -3) + ext);
  }
  for (const file of fs.readdirSync(LIB, { recursive: true })) {
    const name = file.split(path.sep).join('/');
    if (name === '.cache' || name.startsWith('.cache/') || built.has(name)) continue;
    const full = path.join(LIB, file);
    if (fs.statSync(full).isFile()) fs.rmSync(full);
  }
}

if (require.main === module) {
  removeStale();
  const names = bundled();
  bundle(names).then(
    () => writeReexports(names),
    (err) => {
      console.error(err.message);
      process.exitCode = 1;
    },
  );
}

module.exports = { OUTSIDE, bundled };
