/**
 * An HTTP function: greets `name` from a JSON (or form) body, else from the query string.
 *
 * @param {import('funcrun').Context} context the request: query, headers, method, log...
 * @param {unknown} body the request body, parsed by its content type
 */
function handle(context, body) {
  const fromBody = body !== null && typeof body === 'object' ? body.name : undefined;
  const name = fromBody ?? context.query.name ?? 'world';
  // Client input: only a short string. An object such as {"toString": 1} would crash the
  // template below (a 500), and a repeated `?name=a&name=b` arrives as a list.
  if (typeof name !== 'string' || name.length > 100) {
    throw Object.assign(new Error('name must be a string of at most 100 characters'), { statusCode: 400 });
  }
  context.log.info(`greeting ${name}`);
  return { greeting: `${process.env.GREETING || 'Hello'}, ${name || 'world'}!`, method: context.method };
}

module.exports = { handle };
