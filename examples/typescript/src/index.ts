import type { Context, HTTPFunction, StructuredReturn } from 'funcrun';

interface Purchase {
  customerId: number;
  productId: number;
}

/** Ids are Java ints, as in the function contract's purchase example: 1 to 2^31 - 1, so the total stays exact. */
const isId = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 2147483647;

function isPurchase(value: unknown): value is Purchase {
  const p = value as Partial<Purchase> | null | undefined;
  return isId(p?.customerId) && isId(p?.productId);
}

/** An HTTP function in TypeScript: accepts a purchase as JSON and answers 201 with its total. */
export const handle: HTTPFunction = (context: Context, body?: unknown): StructuredReturn => {
  if (context.method !== 'POST') return { statusCode: 405, headers: { allow: 'POST' }, body: { error: 'POST a purchase' } };
  // The body is the client's: a 400 unless both ids are in range (not 1e308, -1, "1" or null).
  if (!isPurchase(body)) {
    throw Object.assign(new Error('expected {"customerId": id, "productId": id}, ids integers from 1 to 2147483647'), { statusCode: 400 });
  }
  const { customerId, productId } = body;
  context.log.info({ customerId }, 'purchase');
  // Only the checked fields go back: other fields of the body are not echoed.
  return { statusCode: 201, headers: { 'x-customer': String(customerId) }, body: { customerId, productId, total: productId * 10 } };
};
