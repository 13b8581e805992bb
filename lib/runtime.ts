// The whole runtime as one file (lib/runtime.js, built by esbuild from this list). Each module's
// own lib/<name>.js is then a one-line re-export of its part of it (lib/build/entries.js), so
// whichever way funcrun is entered (node lib/serve.js, require('funcrun'), funcrun/testing, the
// funcrun command) one copy of it runs, and a cold start loads one file rather than thirty.
// Not here: what the server never needs (funcrun/testing, which loads the CloudEvents SDK, and the
// funcrun command's cli, create, invoke, configure and watch); their files load the runtime's modules
// through the re-exports. A spec checks that every other module is listed.
import * as body from './body';
import * as brand from './brand';
import * as cloudevent from './cloudevent';
import * as cloudeventRead from './cloudevent-read';
import * as cloudeventReply from './cloudevent-reply';
import * as compat from './compat';
import * as config from './config';
import * as connections from './connections';
import * as context from './context';
import * as cors from './cors';
import * as errors from './errors';
import * as exit from './exit';
import * as faults from './faults';
import * as functions from './functions';
import * as headers from './headers';
import * as index from './index';
import * as invocation from './invocation';
import * as kind from './kind';
import * as lifecycle from './lifecycle';
import * as loader from './loader';
import * as log from './log';
import * as mediaType from './media-type';
import * as metrics from './metrics';
import * as otel from './otel';
import * as overload from './overload';
import * as position from './position';
import * as probes from './probes';
import * as provenance from './provenance';
import * as random from './random';
import * as respond from './respond';
import * as router from './router';
import * as scope from './scope';
import * as send from './send';
import * as serve from './serve';
import * as server from './server';
import * as settings from './settings';
import * as startFailure from './start-failure';
import * as suggest from './suggest';
import * as target from './target';
import * as trace from './trace';
import * as types from './types';
import * as xml from './xml';

// The public entry, as index.ts exports it but for `log`: reaching for it (`require('funcrun').log`,
// or an ESM import of funcrun, which reads every name) turns request scoping on (see scope.ts).
const publicIndex = Object.defineProperties({}, {
  ...Object.getOwnPropertyDescriptors(index),
  log: {
    enumerable: true,
    get() {
      scope.useScope();
      return scope.log;
    },
  },
});

export const modules = {
  body,
  brand,
  cloudevent,
  'cloudevent-read': cloudeventRead,
  'cloudevent-reply': cloudeventReply,
  compat,
  config,
  connections,
  context,
  cors,
  errors,
  exit,
  faults,
  functions,
  headers,
  index: publicIndex as typeof index,
  invocation,
  kind,
  lifecycle,
  loader,
  log,
  'media-type': mediaType,
  metrics,
  otel,
  overload,
  position,
  probes,
  provenance,
  random,
  respond,
  router,
  scope,
  send,
  serve,
  server,
  settings,
  'start-failure': startFailure,
  suggest,
  target,
  trace,
  types,
  xml,
};
