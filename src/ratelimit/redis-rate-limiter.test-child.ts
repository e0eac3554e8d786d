/**
 * A second gateway process for `redis-rate-limiter.test.ts` (run with vite-node): opens its own limiter on the
 * shared Redis, says "ready", and on "go" fires its checks at one subject all at once, then reports how many
 * were admitted. Arguments come in TOLLGATE_RL_CHILD as JSON.
 */
import { RedisRateLimiter } from './redis-rate-limiter.js';

export interface ChildArguments {
  redisUrl: string;
  keyPrefix: string;
  subject: string;
  checks: number;
  limit: number;
}

export type ChildMessage = { type: 'ready' } | { type: 'done'; allowed: number } | { type: 'failed'; error: string };

function send(message: ChildMessage): void {
  process.send?.(message);
}

const input = process.env['TOLLGATE_RL_CHILD'];
if (input === undefined || process.send === undefined) {
  throw new Error('Run by redis-rate-limiter.test.ts with an IPC channel and TOLLGATE_RL_CHILD set.');
}
const args = JSON.parse(input) as ChildArguments;
// Fail-closed: a Redis error must surface as a failure, never as a silent admission.
const limiter = new RedisRateLimiter({ redisUrl: args.redisUrl, keyPrefix: args.keyPrefix, failOpen: false });
if (!(await limiter.connect())) {
  send({ type: 'failed', error: `cannot connect to ${args.redisUrl}` });
  process.exit(1);
}
process.once('message', () => {
  void (async () => {
    try {
      const decisions = await Promise.all(
        Array.from({ length: args.checks }, () => limiter.check(args.subject, args.limit)),
      );
      send({ type: 'done', allowed: decisions.filter((decision) => decision.allowed).length });
    } catch (error) {
      send({ type: 'failed', error: String(error) });
    } finally {
      await limiter.close();
      process.disconnect();
    }
  })();
});
send({ type: 'ready' });
