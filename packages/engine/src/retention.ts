/**
 * The retention pruner (DESIGN §6, queue-config §16 "pruning MUST"): every
 * tick it deletes finished jobs older than their retention, per final
 * state and per queue (core pruneTargets: server defaults, minus queues with
 * their own policy, plus one pass per such queue), in bounded batches: each
 * batch is one store step (SQLite: one short write; PostgreSQL: one
 * statement taking rows with SKIP LOCKED, so several server processes prune
 * side by side without waiting on each other or deleting a row twice), and
 * a tick stops after `maxPerTick` jobs so it never monopolises the store.
 * Unique keys of deleted jobs are released in the same step; jobs of
 * workflows are kept. It also removes worker records silent for a day.
 */
import { makeEvent, pruneTargets } from '@ojs/core';
import type { EngineContext } from './context.ts';
import type { QueueSettingsRegistry } from './queue-settings.ts';
import type { WorkerRegistry } from './workers.ts';

export interface RetentionOptions {
  /** Jobs deleted per store step. */
  batchSize?: number;
  /** Jobs deleted per tick at most (the next tick continues). */
  maxPerTick?: number;
}

/** What the pruner uses of the engine: its context, the queues' retention and the worker registry. */
export interface RetentionContext extends EngineContext {
  readonly queueSettings: Pick<QueueSettingsRegistry, 'retentionDefaults' | 'retentionOverrides'>;
  readonly workers: Pick<WorkerRegistry, 'prune'>;
}

export class RetentionPruner {
  readonly #engine: RetentionContext;
  readonly #batchSize: number;
  readonly #maxPerTick: number;

  constructor(engine: RetentionContext, options: RetentionOptions = {}) {
    this.#engine = engine;
    this.#batchSize = options.batchSize ?? 1000;
    this.#maxPerTick = options.maxPerTick ?? 20_000;
  }

  /** One pass over every target; returns how many jobs were deleted. */
  async tick(): Promise<number> {
    const engine = this.#engine;
    const targets = pruneTargets(
      engine.queueSettings.retentionDefaults,
      await engine.queueSettings.retentionOverrides(),
      engine.now(),
    );
    let deleted = 0;
    let deadLetters = 0;
    try {
      for (const target of targets) {
        for (;;) {
          const budget = Math.min(this.#batchSize, this.#maxPerTick - deleted);
          if (budget <= 0) return deleted;
          const n = await engine.store.pruneJobs(target, budget);
          deleted += n;
          if (target.retention === 'dead_letter') deadLetters += n;
          if (n < budget) break;
        }
      }
      await engine.workers.prune();
      return deleted;
    } finally {
      // One event per tick, not per job: the dead-letter spec's dead_letter.pruned.
      if (deadLetters > 0) {
        await engine.store.appendEvents([
          makeEvent('dead_letter.pruned', undefined, { count: deadLetters }, engine.now()),
        ]);
      }
    }
  }
}
