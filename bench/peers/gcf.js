'use strict';
// bench/function/index.js for Google's Functions Framework: an express (req, res) HTTP function.
exports.handle = (req, res) => {
  switch (req.path) {
    case '/json':
      return res.json({ ok: true, customerId: req.body.customerId });
    case '/text':
      return res.type('text/plain').send(`received ${String(req.body).length} characters`);
    case '/xml':
      return res.json({ root: String(req.body).slice(1, 6) });
    case '/query':
      return res.json({ name: req.query.name, page: req.query.page });
    case '/health/readiness':
      return res.send('OK');
    default:
      return res.status(204).end();
  }
};
