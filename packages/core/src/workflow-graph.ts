/**
 * The graph form of a workflow (http-binding §4.15 "DAG model", grpc-proto
 * workflow.proto): steps with ids and `depends_on`. Pure structure only:
 * validating the graph (ids, dependencies, cycles) and answering what a
 * ready step receives. Creating and advancing the
 * workflow record is in workflow.ts; both HTTP and gRPC bindings use these.
 */
import { invalidRequest, type OjsError } from './errors.ts';
import type { WorkflowRecord, WorkflowStep } from './workflow-types.ts';

/** Longest step id (bytes): ids appear in events, logs and job fields. */
export const MAX_STEP_ID_BYTES = 255;

/** One step of the graph as the client wrote it, before its job spec is validated. */
export interface GraphNode {
  id: string;
  depends_on: string[];
}

function invalidStep(message: string, path: string, stepId?: string): OjsError {
  return invalidRequest(message, {
    validation_errors: [{ path, message }],
    ...(stepId === undefined ? {} : { step_id: stepId }),
  });
}

/**
 * Reads ids and dependencies of every step and checks them: ids present,
 * unique and short; dependencies a list of known ids, without repeats or
 * self-references; and no cycle. Errors are 400 naming the step.
 */
export function parseGraph(steps: readonly unknown[], prefix = ''): GraphNode[] {
  const nodes: GraphNode[] = [];
  const indexOf = new Map<string, number>();
  const at = (path: string) => (prefix === '' ? path : `${prefix}.${path}`);
  for (const [index, step] of steps.entries()) {
    const path = at(`steps[${index}]`);
    if (typeof step !== 'object' || step === null || Array.isArray(step)) {
      throw invalidStep(`${path} must be a step object with id, type and depends_on.`, path);
    }
    const { id, depends_on: dependsOn } = step as Record<string, unknown>;
    if (typeof id !== 'string' || id.length === 0) {
      throw invalidStep(`${path}.id is required: a non-empty string.`, `${path}.id`);
    }
    if (Buffer.byteLength(id, 'utf8') > MAX_STEP_ID_BYTES) {
      throw invalidStep(
        `${path}.id is longer than ${MAX_STEP_ID_BYTES} bytes.`,
        `${path}.id`,
        id.slice(0, 64),
      );
    }
    const first = indexOf.get(id);
    if (first !== undefined) {
      throw invalidStep(
        `${path}.id '${id}' is already the id of steps[${first}]; step ids must be unique.`,
        `${path}.id`,
        id,
      );
    }
    indexOf.set(id, index);
    // An absent (or null) depends_on is a root, as an empty list is (grpc-proto: empty = start).
    const deps = dependsOn ?? [];
    if (!Array.isArray(deps) || deps.some((dep) => typeof dep !== 'string')) {
      throw invalidStep(
        `${path}.depends_on must be an array of step ids.`,
        `${path}.depends_on`,
        id,
      );
    }
    nodes.push({ id, depends_on: deps as string[] });
  }
  for (const [index, node] of nodes.entries()) {
    const seen = new Set<string>();
    for (const [position, dep] of node.depends_on.entries()) {
      const path = at(`steps[${index}].depends_on[${position}]`);
      if (dep === node.id) {
        throw invalidStep(
          `Step '${node.id}' (${at(`steps[${index}]`)}) depends on itself.`,
          path,
          node.id,
        );
      }
      if (!indexOf.has(dep)) {
        throw invalidStep(
          `Step '${node.id}' (${at(`steps[${index}]`)}) depends on '${dep}', which is not a step of this workflow.`,
          path,
          node.id,
        );
      }
      if (seen.has(dep)) {
        throw invalidStep(
          `Step '${node.id}' (${at(`steps[${index}]`)}) lists '${dep}' twice in depends_on.`,
          path,
          node.id,
        );
      }
      seen.add(dep);
    }
  }
  const cycle = findCycle(nodes);
  if (cycle !== null) {
    const index = indexOf.get(cycle[0]!)!;
    throw invalidStep(
      `Step '${cycle[0]}' (${at(`steps[${index}]`)}) is part of a dependency cycle: ${cycle.join(' -> ')}.`,
      at(`steps[${index}].depends_on`),
      cycle[0],
    );
  }
  return nodes;
}

/**
 * A cycle of the graph as a path of ids that ends where it starts
 * (`a -> b -> a`), or null when the graph is acyclic. Iterative depth-first
 * search, so a 10,000-step chain does not exhaust the call stack.
 */
export function findCycle(nodes: readonly GraphNode[]): string[] | null {
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const state = new Map<string, 'open' | 'done'>();
  for (const root of nodes) {
    if (state.has(root.id)) continue;
    const stack: { id: string; next: number }[] = [{ id: root.id, next: 0 }];
    state.set(root.id, 'open');
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const deps = byId.get(top.id)?.depends_on ?? [];
      if (top.next >= deps.length) {
        state.set(top.id, 'done');
        stack.pop();
        continue;
      }
      const dep = deps[top.next++]!;
      const seen = state.get(dep);
      if (seen === 'open') {
        const from = stack.findIndex((frame) => frame.id === dep);
        // The stack walks along depends_on; reversed, the path reads in run order.
        return [...stack.slice(from).map((frame) => frame.id), dep].reverse();
      }
      if (seen === undefined && byId.has(dep)) {
        state.set(dep, 'open');
        stack.push({ id: dep, next: 0 });
      }
    }
  }
  return null;
}

/** Steps of a graph workflow keyed by step id. */
export function stepsById(workflow: WorkflowRecord): Map<string, WorkflowStep> {
  return new Map(workflow.steps.map((step) => [step.id!, step]));
}

/**
 * What a ready step receives: the results of its dependencies as an array
 * in `depends_on` order (`parent_results`, the form chain steps get, so a
 * step with one dependency sees `[result]` as a chain step does), and keyed
 * by step id.
 */
export function dependencyResults(
  step: WorkflowStep,
  byId: Map<string, WorkflowStep>,
): { list: unknown[]; byStep: Record<string, unknown> } {
  const list: unknown[] = [];
  const byStep: Record<string, unknown> = {};
  for (const dep of step.depends_on ?? []) {
    const result = byId.get(dep)?.result ?? null;
    list.push(result);
    byStep[dep] = result;
  }
  return { list, byStep };
}
