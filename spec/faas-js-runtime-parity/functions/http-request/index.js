'use strict';
// A bare handler (module.exports is the function): the query, query keys on the context, headers
// and the method.
module.exports = function (context) {
  return {
    query: context.query,
    name: context.name,
    multi: context.multi,
    method: context.method,
    httpVersion: context.httpVersion,
    header: context.headers['x-parity'],
    contentType: context.contentType,
  };
};
