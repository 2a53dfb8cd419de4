/**
 * Workflows as graphs (http-binding §4.15, the form gRPC uses too): steps
 * with ids that depend on other steps. A step runs once every step it
 * depends on has completed and receives their results: `ctx.parentResults`
 * (an array in `dependsOn` order) and `ctx.parentResultsByStep` (by id).
 *
 *   const diamond = graph('diamond')
 *     .step('a', { type: 'extract' })
 *     .step('b', { type: 'transform', dependsOn: ['a'] })
 *     .step('c', { type: 'enrich', dependsOn: ['a'] })
 *     .step('d', { type: 'load', dependsOn: ['b', 'c'] });
 *   const workflow = await client.workflowGraph(diamond);
 *
 * The builder types the ids: `dependsOn` only accepts ids of steps declared
 * before, so a graph built with it has no cycle and no unknown dependency.
 * The server validates every graph again (plain definitions too).
 */
import { ValidationError } from './errors.ts';
import type { WorkflowDefinition, WorkflowJobSpec } from './types.ts';

/** What links a step into the graph: its id and the ids it waits for. */
export interface GraphLinks<Id extends string = string, Dep extends string = string> {
  id: Id;
  /** Ids of the steps that must complete first; none (or empty) = starts at once. */
  dependsOn?: readonly Dep[];
}

/**
 * One step of a graph workflow: a job, or a nested workflow definition
 * (chain, group or batch; its result is what the steps after it receive).
 */
export type GraphStep<Id extends string = string, Dep extends string = string> = (
  | WorkflowJobSpec
  | WorkflowDefinition
) &
  GraphLinks<Id, Dep>;

/** A graph workflow as sent to `client.workflowGraph`. */
export interface GraphDefinition {
  name: string;
  steps: readonly GraphStep[];
  /** Defaults of every step's options (a step's own options win). */
  options?: WorkflowJobSpec['options'];
}

/** Fluent, typed construction of a GraphDefinition; immutable (each call returns a new builder). */
export class GraphBuilder<Ids extends string = never> implements GraphDefinition {
  readonly name: string;
  readonly steps: readonly GraphStep[];
  readonly options: WorkflowJobSpec['options'];

  constructor(
    name: string,
    steps: readonly GraphStep[] = [],
    options?: WorkflowJobSpec['options'],
  ) {
    this.name = name;
    this.steps = steps;
    this.options = options;
  }

  /**
   * Adds a step. Throws a ValidationError for a repeated id or a dependency
   * on a step not declared yet (TypeScript refuses both at compile time).
   */
  step<Id extends string>(
    id: Id extends Ids ? never : Id,
    spec: (WorkflowJobSpec | WorkflowDefinition) & { dependsOn?: readonly Ids[] },
  ): GraphBuilder<Ids | Id> {
    if (this.steps.some((step) => step.id === id)) {
      throw new ValidationError(`Step id '${id}' is already used in graph '${this.name}'.`, {
        code: 'invalid_request',
      });
    }
    for (const dep of spec.dependsOn ?? []) {
      if (!this.steps.some((step) => step.id === dep)) {
        throw new ValidationError(
          `Step '${id}' depends on '${dep}', which is not a step declared before it.`,
          { code: 'invalid_request' },
        );
      }
    }
    return new GraphBuilder<Ids | Id>(this.name, [...this.steps, { ...spec, id }], this.options);
  }

  /** Options applied to every step (a step's own options win). */
  withOptions(options: WorkflowJobSpec['options']): GraphBuilder<Ids> {
    return new GraphBuilder<Ids>(this.name, this.steps, options);
  }
}

/** Starts a graph workflow named `name`. */
export function graph(name: string): GraphBuilder {
  return new GraphBuilder(name);
}
