'use strict';
// A CloudEvent function that answers with plain data, not an event.
const handle = async (context, event) => {
  if (event.type === 'parity.text') return `got ${event.data}`;
  if (event.type === 'parity.nothing') return undefined;
  return { type: event.type, datacontenttype: event.datacontenttype, data: event.data };
};

module.exports = { handle };
