/**
 * Transactional enqueue's outbox (decision 0109) under /ojs/v1/admin/outbox:
 * the rows applications committed and the relay has not turned into jobs
 * yet, and the invalid ones, kept with the error core gave them. An
 * operator retries a row (after fixing what refused it: a missing queue
 * setting, a schema) or removes it. Operator-scoped, as the admin API.
 */
import { OjsError, type OutboxStore, parseOutboxId, parseOutboxListQuery } from '@ojs/core';
import type { FastifyInstance } from 'fastify';

const BASE = '/ojs/v1/admin/outbox';

export async function outboxRoutes(app: FastifyInstance): Promise<void> {
  const { engine } = app;

  /** The store's outbox, or the error of a store without one. */
  const outbox = (): OutboxStore => {
    const store = engine.store.outbox;
    if (store === undefined) {
      throw new OjsError(
        'unsupported',
        `Transactional enqueue needs the PostgreSQL store; this server runs on ${engine.store.backend}.`,
        { feature: 'outbox', backend: engine.store.backend },
      );
    }
    return store;
  };

  const found = <T>(entry: T | null, id: string): T => {
    if (entry === null) throw new OjsError('not_found', `Outbox row '${id}' not found.`, { id });
    return entry;
  };

  app.get(BASE, async (request) => {
    const store = outbox();
    const listing = parseOutboxListQuery(request.query as Record<string, unknown>);
    // Counts first: rows only move from pending to invalid (or go), so a
    // listing read after the counts holds every invalid row they counted.
    const counts = await store.counts();
    const entries = await store.list(listing);
    const last = entries.at(-1);
    return {
      entries,
      counts,
      relaying: engine.outbox.active,
      pagination: {
        limit: listing.limit,
        next_after: entries.length === listing.limit && last !== undefined ? last.id : null,
      },
    };
  });

  app.get<{ Params: { id: string } }>(`${BASE}/:id`, async (request) => {
    const id = parseOutboxId(request.params.id);
    return { entry: found(await outbox().get(id), id) };
  });

  app.post<{ Params: { id: string } }>(`${BASE}/:id/retry`, async (request) => {
    const id = parseOutboxId(request.params.id);
    const entry = found(await outbox().retry(id), id);
    engine.outbox.wake();
    return { entry };
  });

  app.delete<{ Params: { id: string } }>(`${BASE}/:id`, async (request) => {
    const id = parseOutboxId(request.params.id);
    return { entry: found(await outbox().remove(id), id) };
  });
}
