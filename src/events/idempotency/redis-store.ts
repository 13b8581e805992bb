// The idempotency store in Redis, shared by every replica: each of the store's operations is one
// call on the connection (redis-connection.ts: node-redis, bounded, reconnecting), made of the
// commands and reply checks in redis-scripts.ts (a claim is `SET NX PX`; an answer replaces it for
// the window; a claim is extended and released by scripts, only while it is still this delivery's).
import type { Claim, IdempotencyStore } from './memory-store';
import { RedisConnection } from './redis-connection';
import {
  checkReleased,
  claimCommand,
  claimFound,
  completeCommand,
  completedOf,
  extendCommand,
  isClaimed,
  isExtended,
  releaseCommand,
  valueCommand,
} from './redis-scripts';
import type { Logger } from '../../log/log';

/**
 * The Redis store at `url` (redis:// or rediss://), with node-redis found from `folder`. Throws
 * when node-redis is not installed or the URL is not a Redis URL; a Redis that cannot be reached
 * yet is no error: the store starts with problem() set and connects when Redis is there.
 */
export async function redisStore(url: string, folder: string, log: Logger): Promise<IdempotencyStore> {
  const redis = await RedisConnection.open(url, folder, log);
  return {
    // A claim whose answer is lost (a timeout, a connection cut) may have been taken all the same:
    // the caller gives it back by its token (idempotency.ts) once Redis answers again.
    claim(held, claimMs) {
      return redis.call(async (): Promise<Claim> => {
        if (isClaimed(await redis.send(claimCommand(held, claimMs)))) return { state: 'claimed' };
        return claimFound(await redis.send(valueCommand(held), true));
      });
    },

    async extend(held, claimMs) {
      return isExtended(await redis.call(() => redis.send(extendCommand(held, claimMs))));
    },

    async complete(held, answer, windowMs) {
      return completedOf(await redis.call(() => redis.send(completeCommand(held, answer, windowMs))));
    },

    async release(held) {
      checkReleased(await redis.call(() => redis.send(releaseCommand(held))));
    },

    problem: () => redis.problem(),
    close: () => redis.close(),
  };
}
