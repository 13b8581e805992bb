/**
 * A CloudEvent function: receives an order event and answers with a confirmation event.
 *
 * @param {import('funcrun').Context} context `context.cloudevent` is the incoming event
 * @param {{ customerId?: number, productId?: number }} order the event's data
 */
function handle(context, order) {
  const event = context.cloudevent;
  if (!event) {
    const error = new Error('send a CloudEvent (binary or structured)');
    error.statusCode = 400;
    throw error;
  }
  context.log.info({ id: event.id, type: event.type }, 'order received');
  return context
    .cloudEventResponse({ confirmed: true, customerId: order?.customerId, productId: order?.productId })
    .type('dev.example.order.confirmed')
    .source('/order-confirmer')
    .response();
}

module.exports = { handle };
