'use strict';
// bench/function/index.js for faas-js-runtime 4: the event arrives whole as the second argument.
// The SDK is loaded with the first request that needs it, as the raw server loads it.
let CloudEvent;

module.exports = function handle(context, data) {
  // Every request comes to `/`: the process serves one workload, named by bench/run.js.
  const path = `/${process.env.BENCH_WORKLOAD}`;
  switch (path) {
    case '/json':
      return { ok: true, customerId: data.customerId };
    case '/text':
      return `received ${String(data).length} characters`;
    case '/binary-event':
    case '/structured-event':
    case '/batch-event':
      return { ok: true, type: context.cloudevent.type, customerId: context.cloudevent.data.customerId };
    case '/event-reply':
      return context.cloudEventResponse({ ok: true, customerId: context.cloudevent.data.customerId }).type('dev.bench.reply').source('/bench').response();
    case '/event-return':
      CloudEvent ??= require('cloudevents').CloudEvent;
      return new CloudEvent({ source: '/bench', type: 'dev.bench.reply', data: { ok: true, customerId: context.cloudevent.data.customerId } });
    case '/xml':
      return { root: String(data).slice(1, 6) };
    case '/query':
      return { name: context.query.name, page: context.query.page };
    default:
      return undefined;
  }
};
