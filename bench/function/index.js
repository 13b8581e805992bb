'use strict';
// The function the benchmark serves with funcrun: one handler, one branch per workload.
// The SDK is loaded with the first request that needs it, as the raw server loads it.
let CloudEvent;

module.exports = {
  handle(context, data) {
    switch (context.path) {
      case '/json':
        return { ok: true, customerId: data.customerId };
      case '/text':
        return `received ${data.length} characters`;
      case '/event':
        return { ok: true, type: context.cloudevent.type, customerId: data.customerId };
      case '/event-reply':
        return context.cloudEventResponse({ ok: true, customerId: data.customerId }).type('dev.bench.reply').source('/bench').response();
      case '/event-return':
        CloudEvent ??= require('cloudevents').CloudEvent;
        return new CloudEvent({ source: '/bench', type: 'dev.bench.reply', data: { ok: true, customerId: data.customerId } });
      case '/xml':
        return { root: data.documentElement.nodeName };
      case '/query':
        return { name: context.query.name, page: context.query.page };
      default:
        return undefined;
    }
  },
};
