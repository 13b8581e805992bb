import type { Context, HTTPFunction, StructuredReturn } from 'funcrun';

interface Purchase {
  customerId: number;
  productId: number;
}

function isPurchase(value: unknown): value is Purchase {
  const p = value as Purchase | undefined;
  return Number.isInteger(p?.customerId) && Number.isInteger(p?.productId);
}

/** An HTTP function in TypeScript: accepts a purchase as JSON and answers 201 with its total. */
export const handle: HTTPFunction = (context: Context, body?: unknown): StructuredReturn => {
  if (context.method !== 'POST') return { statusCode: 405, headers: { allow: 'POST' }, body: { error: 'POST a purchase' } };
  if (!isPurchase(body)) return { statusCode: 400, body: { error: 'expected { customerId, productId } as integers' } };
  context.log.info({ customerId: body.customerId }, 'purchase');
  return { statusCode: 201, headers: { 'x-customer': String(body.customerId) }, body: { ...body, total: body.productId * 10 } };
};
