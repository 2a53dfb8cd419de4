/**
 * Rate-limit inspection (`urn:ojs:ext:rate-limiting` RL-005, features §7.3):
 * GET /ojs/v1/rate-limits/{key} shows a key's concurrency use, its current
 * fixed window and the jobs waiting for it. Limits are per job (the
 * `rate_limit` policy of the newest waiting or active job with the key).
 */
import { formatIsoDuration, invalidRequest, toIso } from '@ojs/core';
import type { FastifyInstance } from 'fastify';

const KEY_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9._:-]{0,254}$/;

export async function rateLimitRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  app.get<{ Params: { key: string } }>('/ojs/v1/rate-limits/:key', async (request) => {
    const key = request.params.key;
    if (!KEY_PATTERN.test(key)) {
      throw invalidRequest('key must match ^[a-zA-Z0-9][a-zA-Z0-9._:-]*$.', { field: 'key' });
    }
    const state = await engine.store.rateLimitState(key);
    const policy = state.policy;
    const concurrency =
      policy?.concurrency === undefined
        ? null
        : {
            limit: policy.concurrency,
            active: state.active,
            available: Math.max(0, policy.concurrency - state.active),
          };
    const now = engine.now();
    const rate = policy?.rate;
    const window = state.window;
    const open = rate !== undefined && window !== null && now < window.start + rate.period_ms;
    return {
      key,
      concurrency,
      rate:
        rate === undefined
          ? null
          : {
              limit: rate.limit,
              period: formatIsoDuration(rate.period_ms),
              current_count: open ? window!.count : 0,
              window_resets_at: open ? toIso(window!.start + rate.period_ms) : null,
            },
      active_count: state.active,
      waiting_count: state.waiting,
    };
  });
}
