/**
 * Chaos with Redis itself SIGKILLed and restarted (a redis-server of the
 * test's own): with AOF (appendfsync always) nothing acknowledged is lost
 * and nothing completes twice; without AOF the loss is measured and printed.
 */
import { it } from 'node:test';
import { defineChaosSuite, defineRedisNoAofLoss, redisServerUnavailable } from './chaos-suite.ts';
import { wantedStores } from './helpers.ts';

const reason = wantedStores().includes('redis')
  ? await redisServerUnavailable()
  : 'excluded by OJS_SDK_TEST_STORES';
if (reason === undefined) {
  defineChaosSuite('redis', { restartRedis: true });
  defineRedisNoAofLoss();
} else it('chaos with Redis restarts', { skip: reason }, () => {});
