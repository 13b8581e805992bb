'use strict';
// An HTTP function that throws, chosen by ?kind=.
const handle = async (context) => {
  switch (context.query.kind) {
    case 'code': {
      const err = new Error('unavailable for legal reasons');
      err.code = 451;
      throw err;
    }
    case 'statusCode': {
      const err = new Error('forbidden here');
      err.statusCode = 403;
      throw err;
    }
    case 'code-headers': {
      const err = new Error('log in first');
      err.code = 401;
      err.headers = { 'www-authenticate': 'Bearer', 'x-error': 'yes' };
      throw err;
    }
    case 'code-404': {
      const err = new Error('no such order');
      err.code = 404;
      throw err;
    }
    case 'code-string': {
      const err = new Error('ENOENT: no such file');
      err.code = 'ENOENT';
      throw err;
    }
    case 'plain':
      throw new Error('connect ECONNREFUSED 10.0.3.7:5432');
    case 'string':
      throw 'a string';
    default:
      return 'no error';
  }
};

module.exports = { handle };
