// Eleven mistakes function authors make, each of which the exported types must refuse. Every line
// marked `error TSnnnn` must fail to compile with that code, and no other line may fail: the
// correct forms of the same code are in correct-forms.ts.
import { test } from 'node:test';
import { HttpError } from 'funcrun';
import { serve } from 'funcrun/testing';
import type { CloudEventFunction, Context, Function, HTTPFunction, StructuredReturn } from 'funcrun';

interface Order {
  id: number;
  quantity: number;
}
interface Receipt {
  total: number;
}

// 1. A misspelt structured-return key: the object would be sent as JSON with status 200.
export const misspeltArrow: HTTPFunction = () => ({ statusCod: 201 }); // error TS2322
export const misspeltAsync: HTTPFunction = async () => ({ statusCod: 201 }); // error TS2322
export function misspeltDeclared(_context: Context): StructuredReturn {
  return { statusCod: 201 }; // error TS2561
}

// 2. A status code as text.
export const textStatusArrow: HTTPFunction = () => ({ statusCode: '201' }); // error TS2322
export const textStatusAsync: HTTPFunction = async () => ({ statusCode: '201' }); // error TS2322
export function textStatusDeclared(_context: Context): StructuredReturn {
  return { statusCode: '201' }; // error TS2322
}

// 3. A misspelt member of the context: no index signature turns it into `unknown`.
export const misspeltContext: HTTPFunction = (context) => ({ name: context.qeury.name }); // error TS2551

// 4. The event's data read with a key its type does not have.
export const misspeltData: CloudEventFunction<Order> = (_context, order) => ({ id: order?.idd }); // error TS2339

// 5. `context.cloudevent.data` has the function's data type too.
export const eventData: CloudEventFunction<Order> = (context) => {
  const quantity: string | undefined = context.cloudevent?.data?.quantity; // error TS2322
  return { quantity };
};

// 6. The answer's data is not the declared response type, through the whole response chain.
export const wrongAnswer: CloudEventFunction<Order, Receipt> = (context, order) =>
  context.cloudEventResponse({ total: String(order?.quantity) }).id('1').source('/shop').type('receipt').version('1.0').response(); // error TS2322

// 7. A misspelt lifecycle export: the probe would never be called.
export const module: Function = { handle: () => 'OK', livness: () => true }; // error TS2561

// 8. A header value that is not text, a number or a list of text.
export const dateHeader: HTTPFunction = () => ({ body: 'OK', headers: { expires: new Date() } }); // error TS2322

// 9. The arguments the wrong way round (a named function's order is `(input, context)`).
export const swapped: HTTPFunction = (order: Order, context: Context) => ({ id: order.id, path: context.path }); // error TS2322

// 10. A thrown HttpError with its status as text.
export const textErrorStatus: HTTPFunction = () => {
  throw new HttpError('404', 'no such order'); // error TS2345
};

// 11. serve() without the test's context: nothing would close the server after the test.
export const unclosed = test('answers', async () => {
  await serve(misspeltArrow); // error TS2554
});
