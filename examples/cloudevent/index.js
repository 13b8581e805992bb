/** Ids are Java ints, as in the function contract's purchase example: 1 to 2^31 - 1. */
const isId = (value) => Number.isInteger(value) && value >= 1 && value <= 2147483647;

/**
 * A CloudEvent function: receives an order event and answers with a confirmation event.
 *
 * @param {import('funcrun').Context} context `context.cloudevent` is the incoming event
 * @param {unknown} order the event's data: `{ customerId, productId }`
 */
function handle(context, order) {
  const event = context.cloudevent;
  if (!event) {
    throw Object.assign(new Error('send a CloudEvent (binary or structured)'), { statusCode: 400 });
  }
  // The data is the client's: confirm only a real order, never null, bytes or ids of another type.
  if (order === null || typeof order !== 'object' || !isId(order.customerId) || !isId(order.productId)) {
    throw Object.assign(new Error('the event data must be {"customerId": id, "productId": id}, ids integers from 1 to 2147483647'), { statusCode: 400 });
  }
  context.log.info({ id: event.id, type: event.type }, 'order received');
  return context
    .cloudEventResponse({ confirmed: true, customerId: order.customerId, productId: order.productId })
    .type('dev.example.order.confirmed')
    .source('/order-confirmer')
    .response();
}

module.exports = { handle };
