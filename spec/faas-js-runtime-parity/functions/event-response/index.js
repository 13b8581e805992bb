'use strict';
// A CloudEvent function that answers through context.cloudEventResponse(): the documented chain,
// with an id of its own, so only the time is invented.
const handle = (context, event) => {
  const chain = context
    .cloudEventResponse({ replyTo: event.id, echoed: event.data })
    .id(`reply-${event.id}`)
    .source('/parity/response')
    .type('parity.response')
    .version(event.specversion);
  // ?unfinished: the chain returned without response().
  return context.query.unfinished === undefined ? chain.response() : chain;
};

module.exports = { handle };
