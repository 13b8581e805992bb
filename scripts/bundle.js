'use strict';
// npm run bundle (part of npm run build, after tsc): the whole runtime as one file, lib/runtime.js,
// with its source map, and each bundled module's lib/<name>.js made a one-line re-export of its part
// of it. So whichever way funcrun is entered (node lib/serve.js, require('funcrun'), funcrun/testing,
// the funcrun command) one copy of it runs, and a cold start loads one file rather than thirty.
// The bundle's entry is written here, from lib/*.ts: every module but those named in OUTSIDE.
const fs = require('node:fs');
const path = require('node:path');

const LIB = path.join(__dirname, '..', 'lib');

/** The modules of lib/ left out of the bundle, and why. */
const OUTSIDE = {
  cli: 'the funcrun command: the server never needs it',
  create: 'the funcrun command',
  invoke: 'the funcrun command',
  configure: 'the funcrun command',
  watch: 'the funcrun command',
  'cache-command': 'the funcrun command',
  testing: 'funcrun/testing, which loads the CloudEvents SDK',
  'compile-cache': 'loaded by the entry points before the bundle, so that the bundle is cached',
  'source-maps': 'used by the entry points before the bundle loads, and by serve.ts: one copy of its state',
  'code-cache': 'loads the bundle for the entry points, and is used by config.ts, loader.ts and serve.ts: one copy of its state',
};

/** The bundled modules' names: lib/*.ts but the declarations and OUTSIDE. */
function bundled() {
  return fs
    .readdirSync(LIB)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => file.slice(0, -'.ts'.length))
    .filter((name) => !Object.hasOwn(OUTSIDE, name))
    .sort();
}

/** The entry esbuild bundles: `modules`, each module's exports by its name. */
function entry(names) {
  const imports = names.map((name, i) => `import * as m${i} from './${name}';`);
  // The public entry (index.ts) turns request scoping on when its `log` is read (scope.ts).
  const members = names.map((name, i) => `  ${JSON.stringify(name)}: ${name === 'index' ? `withScopingOnLog(m${i})` : `m${i}`},`);
  return [...imports, "import { withScopingOnLog } from './scope';", 'export const modules = {', ...members, '};', ''].join('\n');
}

function bundle(names) {
  require('esbuild').buildSync({
    stdin: { contents: entry(names), resolveDir: LIB, sourcefile: '../scripts/bundle.js', loader: 'ts' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // Loaded from node_modules (yaml: lib/yaml.js, bundled on its own, only when there is a func.yaml).
    // ./source-maps: its one copy is the one the entry points load (OUTSIDE).
    external: ['cloudevents', '@xmldom/xmldom', 'ajv', 'ajv-formats', '@fastify/busboy', './yaml', './source-maps', './code-cache'],
    outfile: path.join(LIB, 'runtime.js'),
    // A map beside the bundle, without the sources' text: the logger reads it for the first stack it
    // maps (source-maps.ts), and a stack needs only the file and line it names.
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  });
}

const SERVE_AS_PROGRAM = `// Run as a program: the compiled code is kept for the next start (compile-cache.ts), before the
// bundle loads, and the stacks funcrun logs name its TypeScript (source-maps.ts); the bundle is
// loaded with its code cache (code-cache.ts).
if (require.main === module) {
  require('./compile-cache.js');
  require('./source-maps.js').mapFuncrunStacks();
  const { requireCached, RUNTIME } = require('./code-cache.js');
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
    const reexport = `module.exports = require('./runtime.js').modules[${JSON.stringify(name)}];\n${annotation}`;
    const text =
      name === 'serve'
        ? `#!/usr/bin/env node\n'use strict';\n${SERVE_AS_PROGRAM}${reexport}// argv[1] is the command as it was typed (a faas-js-runtime link stays that name).\nif (require.main === module) void module.exports.serve(process.argv.slice(2), process.argv[1]);\n`
        : `'use strict';\n// Generated (scripts/bundle.js): this module lives in lib/runtime.js.\n${reexport}`;
    fs.writeFileSync(path.join(LIB, `${name}.js`), text);
  }
}

if (require.main === module) {
  const names = bundled();
  bundle(names);
  writeReexports(names);
}

module.exports = { OUTSIDE, bundled };
