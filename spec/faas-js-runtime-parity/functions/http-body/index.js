'use strict';
// An HTTP function that reports the body it was given, whatever its type.
const handle = async (context, body) => {
  return {
    received: body,
    kind: Buffer.isBuffer(body) ? 'buffer' : typeof body,
    contentType: context.contentType,
    method: context.method,
  };
};

module.exports = { handle };
