'use strict';
// After the build: each module's lib/<name>.js becomes a re-export of its part of lib/runtime.js,
// the one bundled copy of the runtime (see lib/runtime.ts). serve.js also keeps its command line.
const fs = require('node:fs');
const path = require('node:path');

const lib = path.join(__dirname, '..');
const { modules } = require(path.join(lib, 'runtime.js'));
for (const name of Object.keys(modules)) {
  const file = path.join(lib, `${name}.js`);
  // The names, listed the way esbuild annotates its own output, so that ESM's `import { start }
  // from 'funcrun'` finds them (node reads them statically, with cjs-module-lexer).
  const names = Object.keys(modules[name]).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n));
  const annotation = names.length ? `0 && (module.exports = { ${names.join(', ')} });\n` : '';
  const reexport = `module.exports = require('./runtime.js').modules[${JSON.stringify(name)}];\n${annotation}`;
  const text =
    name === 'serve'
      ? `#!/usr/bin/env node\n'use strict';\n// Run as a program, the compiled code is kept for the next start (compile-cache.ts).\nif (require.main === module) require('./compile-cache.js');\n${reexport}// argv[1] is the command as it was typed (a faas-js-runtime link stays that name).\nif (require.main === module) void module.exports.serve(process.argv.slice(2), process.argv[1]);\n`
      : `'use strict';\n// Generated: this module lives in lib/runtime.js (see lib/runtime.ts).\n${reexport}`;
  fs.writeFileSync(file, text);
}
