/**
 * An HTTP function: greets `name` from the query string or a JSON body.
 *
 * @param {import('funcrun').Context} context the request: query, headers, method, log...
 * @param {unknown} body the request body, parsed by its content type
 */
function handle(context, body) {
  const name = (body && typeof body === 'object' && body.name) || context.query.name || 'world';
  context.log.info(`greeting ${name}`);
  return { greeting: `${process.env.GREETING || 'Hello'}, ${name}!`, method: context.method };
}

module.exports = { handle };
