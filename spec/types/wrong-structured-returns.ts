// A structured return (an object with `headers` or `body`) has `statusCode`, `headers` and `body`
// only: funcrun ignores any other key, so a misspelt one would go unnoticed. Every line marked
// `error TSnnnn 'key'` must fail to compile with that code and an error that names the key, in each
// form a handler returns in; the forms that must still compile are in correct-forms.ts.
import type { CloudEventFunction, Context, EventHandler, HTTPFunction, HTTPFunctionReturn, StructuredReturn } from 'funcrun';
import { defineEvents } from 'funcrun';

declare const body: { id: number };
export const events = defineEvents({ types: { 'com.example.ordered': { type: 'object' } } });

// The two of the report: a 200 with a misspelt status, and headers under a key funcrun ignores.
export const statusArrow: HTTPFunction = () => ({ statusCod: 201, body }); // error TS2322 'statusCod'
export const headerArrow: HTTPFunction = () => ({ statusCode: 200, body, header: {} }); // error TS2322 'header'
export const statusAsync: HTTPFunction = async () => ({ statusCod: 201, body }); // error TS2322 'statusCod'
export const headerAsync: HTTPFunction = async () => ({ statusCode: 200, body, header: {} }); // error TS2322 'header'
export function statusDeclared(_context: Context): StructuredReturn {
  return { statusCod: 201, body }; // error TS2561 'statusCod'
}
export function headerDeclared(_context: Context): HTTPFunctionReturn {
  return { statusCode: 200, body, header: {} }; // error TS2322 'header'
}
export const headerSatisfies = { statusCode: 200, body, header: {} } satisfies StructuredReturn; // error TS2561 'header'
export const statusEvent: EventHandler<typeof events> = () => ({ statusCod: 201, body }); // error TS2322 'statusCod'
export const headerEvent: CloudEventFunction<{ id: number }> = async () => ({ statusCode: 200, body, header: {} }); // error TS2322 'header'

// Any other key, not only those that stop short of one of the three.
export const other: HTTPFunction = () => ({ headers: { location: '/orders/7' }, statsCode: 302 }); // error TS2322 'statsCode'
export const capital: HTTPFunction = () => ({ Body: 'OK', headers: {} }); // error TS2322 'Body'
export const longer: HTTPFunction = () => ({ statusCode: 200, body, headerss: {} }); // error TS2322 'headerss'
export const headerAsKey: HTTPFunction = () => ({ body: 'OK', 'content-type': 'text/plain' }); // error TS2322 'content-type'
export const inBranch: HTTPFunction = (context) => (context.method === 'HEAD' ? 'OK' : { body, stauts: 201 }); // error TS2322 'stauts'
