// A helper module: `log` writes with the current invocation's reqId and trace.
const { log } = require('funcrun');

exports.priceOf = async (id) => {
  log.info({ id }, 'price asked');
  return 300;
};
