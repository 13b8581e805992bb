#!/usr/bin/env node
'use strict';
// faas-js-runtime's command where faas-js-runtime keeps it: Knative's templates run it by this
// path (`npm run debug`: nodemon --inspect ./node_modules/faas-js-runtime/bin/cli.js ./index.js).
// It is funcrun's server, as the package's faas-js-runtime binary is.
require('../lib/boot/compile-cache.js');
require('../lib/boot/source-maps.js').mapFuncrunStacks();
void require('../lib/serve.js').serve(process.argv.slice(2), process.argv[1]);
