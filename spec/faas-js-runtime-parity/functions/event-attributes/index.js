'use strict';
// A CloudEvent function that reads the event's attributes and answers with a new CloudEvent.
const { CloudEvent } = require('cloudevents');

const handle = async (context, event) => {
  context.log.info('event', event);
  return new CloudEvent({
    source: '/parity/attributes',
    type: `${event.type}.seen`,
    subject: event.id,
    parityext: 'added',
    data: {
      id: event.id,
      type: event.type,
      source: event.source,
      specversion: event.specversion,
      datacontenttype: event.datacontenttype,
      subject: event.subject,
      myext: event.myext,
      data: event.data,
    },
  });
};

module.exports = { handle };
