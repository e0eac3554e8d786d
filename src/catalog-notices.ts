import type { Logger } from 'pino';

/** The channel an instance announces a stored catalog change on; a notice only makes the others poll at once. */
const CHANNEL = 'tollgate:catalog-revision';

export interface CatalogNotices {
  /** Tells the other instances a revision was stored (best effort: polling still finds it). */
  publish(revision: number): void;
  close(): Promise<void>;
}

/**
 * Catalog change notices over Redis pub/sub, when REDIS_URL is set: the instances read the new revision at once
 * instead of at their next poll. Redis being down costs only that: the poll still finds every change. ioredis is
 * loaded here, not at start-up, so a gateway without Redis (the embedded SQLite default) never carries it.
 */
export function redisCatalogNotices(redisUrl: string, onNotice: () => void, logger: Logger): CatalogNotices {
  const quiet = (what: string) => (error: unknown) =>
    logger.debug({ err: error }, `catalog notices: ${what} failed; changes are found by polling`);
  const links = import('ioredis').then(({ Redis }) => {
    const options = { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 1_000 };
    const publisher = new Redis(redisUrl, options);
    const subscriber = new Redis(redisUrl, { ...options, enableOfflineQueue: true });
    publisher.on('error', quiet('the Redis link'));
    subscriber.on('error', quiet('the Redis subscription'));
    subscriber.on('message', (channel: string) => {
      if (channel === CHANNEL) onNotice();
    });
    void publisher.connect().catch(quiet('connecting'));
    void subscriber
      .connect()
      .then(() => subscriber.subscribe(CHANNEL))
      .catch(quiet('subscribing'));
    return { publisher, subscriber };
  });
  return {
    publish(revision) {
      void links.then(({ publisher }) => publisher.publish(CHANNEL, String(revision))).catch(quiet('publishing'));
    },
    async close() {
      const { publisher, subscriber } = await links;
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}
