// TEMPORARY STUB (replaced by the redis-store branch)
import type { IdempotencyStore } from './idempotency-store';
import type { Logger } from './log';
export async function redisStore(_url: string, _folder: string, _log: Logger): Promise<IdempotencyStore> {
  throw new Error('not yet');
}
