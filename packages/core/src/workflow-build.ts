/**
 * Reading a workflow request into a record (features §3.1, http-binding
 * §4.15): chain / group / batch by `type`, the graph form by its shape (no
 * type, steps with ids and depends_on). Every step is validated here, nested
 * workflows included (features §3.7: a step may itself be a workflow, up to
 * MAX_WORKFLOW_DEPTH levels), so a request is refused whole with a 400 that
 * names the offending step's path before anything is stored.
 */
import { type EnqueueDefaults, parseEnqueueRequest } from './envelope.ts';
import { invalidRequest, OjsError } from './errors.ts';
import { isObject } from './is-object.ts';
import type { JobRecord } from './job-types.ts';
import { toIso } from './time.ts';
import { uuidv7 } from './uuid.ts';
import { parseGraph } from './workflow-graph.ts';
import type { CallbackKind, WorkflowRecord, WorkflowStep, WorkflowType } from './workflow-types.ts';

type Obj = Record<string, unknown>;

/** Jobs per workflow, nested workflows' jobs included (callbacks not counted). */
export const MAX_WORKFLOW_STEPS = 10_000;
/** Levels of nesting: a workflow (1) whose step is a workflow (2) ... (features §3.7). */
export const MAX_WORKFLOW_DEPTH = 5;

/** The types a request may name; a graph is recognised by its shape (no type). */
const TYPES: readonly WorkflowType[] = ['chain', 'group', 'batch'];
export const CALLBACK_KINDS: readonly CallbackKind[] = ['on_complete', 'on_success', 'on_failure'];

/** Steps of the graph form: at least one names an id or dependencies. */
const isGraphSteps = (steps: unknown): steps is unknown[] =>
  Array.isArray(steps) && steps.some((s) => isObject(s) && ('id' in s || 'depends_on' in s));

/**
 * A step that is itself a workflow: a chain/group/batch with its list, or
 * a graph (no type, steps with ids). A step of type `chain` without a list
 * is a job of that type.
 */
export function isWorkflowBody(spec: unknown): boolean {
  if (!isObject(spec)) return false;
  if (spec.type === undefined || spec.type === null) return isGraphSteps(spec.steps);
  return (
    TYPES.includes(spec.type as WorkflowType) &&
    (Array.isArray(spec.steps) || Array.isArray(spec.jobs))
  );
}

export function invalidWorkflow(message: string, path: string, extra: Obj = {}): OjsError {
  return invalidRequest(message, { ...extra, validation_errors: [{ path, message }] });
}

const at = (prefix: string, path: string) => (prefix === '' ? path : `${prefix}.${path}`);

/** Validates a job spec by building the job it describes (errors name the path). */
export function validateSpec(
  spec: unknown,
  path: string,
  now: number,
  defaults: EnqueueDefaults,
): JobRecord {
  if (!isObject(spec))
    throw invalidWorkflow(`${path} must be a job object with type and args.`, path);
  try {
    return parseEnqueueRequest({ args: [], ...spec }, now, defaults);
  } catch (error) {
    // Any invalid step makes the workflow invalid: 400 with the step's path (features §3.8).
    if (error instanceof OjsError) {
      const message = `${path}: ${error.message}`;
      throw new OjsError(
        'invalid_request',
        message,
        {
          ...error.details,
          path,
          step_error_code: error.code,
          validation_errors: [{ path, message: error.message }],
        },
        error.hint,
      );
    }
    throw error;
  }
}

export interface BuildOptions {
  /** Level of this workflow: 1 for the request, parent + 1 for a nested one. */
  depth?: number;
  /** Path of this workflow in the request, for error messages (`steps[2]`). */
  path?: string;
  /** Jobs counted so far across the levels of one request. */
  counter?: { jobs: number };
}

/**
 * Validates a workflow request (nested levels included) and returns its
 * record, every step `waiting`. Starting it is workflow.ts's business.
 */
export function buildWorkflow(
  body: unknown,
  now: number,
  defaults: EnqueueDefaults,
  options: BuildOptions = {},
): WorkflowRecord {
  const depth = options.depth ?? 1;
  const prefix = options.path ?? '';
  const counter = options.counter ?? { jobs: 0 };
  if (!isObject(body)) throw invalidWorkflow('The workflow must be a JSON object.', prefix || '$');
  if (depth > MAX_WORKFLOW_DEPTH) {
    throw invalidWorkflow(
      `${prefix}: workflows nest at most ${MAX_WORKFLOW_DEPTH} levels deep.`,
      prefix,
      { max_depth: MAX_WORKFLOW_DEPTH },
    );
  }
  const type = body.type;
  const graph = (type === undefined || type === null) && isGraphSteps(body.steps);
  if (!graph && (typeof type !== 'string' || !TYPES.includes(type as WorkflowType))) {
    throw invalidWorkflow(
      'type must be one of chain, group, batch (or leave type out and give steps with id and depends_on for a graph).',
      at(prefix, 'type'),
    );
  }
  // Chains list `steps`, groups and batches `jobs`; the other name is accepted as an alias.
  const primary = graph || type === 'chain' ? 'steps' : 'jobs';
  const alias = primary === 'steps' ? 'jobs' : 'steps';
  const listName =
    !graph && body[primary] === undefined && body[alias] !== undefined ? alias : primary;
  const list = body[listName];
  if (!Array.isArray(list) || list.length === 0) {
    throw invalidWorkflow(`${listName} must be a non-empty array of jobs.`, at(prefix, listName));
  }
  if (body.name !== undefined && body.name !== null && typeof body.name !== 'string') {
    throw invalidWorkflow('name must be a string.', at(prefix, 'name'));
  }
  const tooMany = () =>
    invalidWorkflow(
      `A workflow may hold at most ${MAX_WORKFLOW_STEPS} jobs, nested workflows included.`,
      at(prefix, listName),
    );
  if (counter.jobs + list.length > MAX_WORKFLOW_STEPS) throw tooMany();

  const stepOptions = graph ? body.options : undefined;
  if (stepOptions !== undefined && stepOptions !== null && !isObject(stepOptions)) {
    throw invalidWorkflow('options must be an object of step options.', at(prefix, 'options'));
  }
  const nodes = graph ? parseGraph(list, prefix) : undefined;
  const steps = list.map((raw, index): WorkflowStep => {
    const path = at(prefix, `${listName}[${index}]`);
    const spec = graph ? graphStepSpec(raw as Obj, stepOptions ?? undefined) : raw;
    try {
      if (isWorkflowBody(spec)) {
        buildWorkflow(spec, now, defaults, { depth: depth + 1, path, counter });
      } else {
        counter.jobs++;
        validateSpec(spec, path, now, defaults);
      }
    } catch (error) {
      if (
        error instanceof OjsError &&
        nodes !== undefined &&
        error.details?.step_id === undefined
      ) {
        throw new OjsError(
          error.code,
          error.message,
          { ...error.details, step_id: nodes[index]!.id },
          error.hint,
        );
      }
      throw error;
    }
    if (counter.jobs > MAX_WORKFLOW_STEPS) throw tooMany();
    const step: WorkflowStep = { index, spec: spec as Obj, state: 'waiting' };
    if (nodes !== undefined) {
      step.id = nodes[index]!.id;
      step.depends_on = nodes[index]!.depends_on;
    }
    return step;
  });

  const workflow: WorkflowRecord = {
    id: uuidv7(now),
    type: graph ? 'dag' : (type as WorkflowType),
    state: 'running',
    steps,
    created_at: toIso(now),
    started_at: toIso(now),
    rev: 0,
  };
  if (typeof body.name === 'string') workflow.name = body.name;
  if (depth > 1) workflow.depth = depth;
  const callbacks = readCallbacks(body, workflow.type, prefix, now, defaults);
  if (callbacks !== undefined) workflow.callbacks = callbacks;
  return workflow;
}

function readCallbacks(
  body: Obj,
  type: WorkflowType,
  prefix: string,
  now: number,
  defaults: EnqueueDefaults,
): WorkflowRecord['callbacks'] {
  if (body.callbacks === undefined && type !== 'batch') return undefined;
  const path = at(prefix, 'callbacks');
  if (!isObject(body.callbacks)) {
    throw invalidWorkflow(
      'A batch needs callbacks with on_complete, on_success or on_failure.',
      path,
    );
  }
  const callbacks: NonNullable<WorkflowRecord['callbacks']> = {};
  for (const kind of CALLBACK_KINDS) {
    const spec = body.callbacks[kind];
    if (spec === undefined || spec === null) continue;
    if (isWorkflowBody(spec)) {
      throw invalidWorkflow(
        `${path}.${kind}: a callback is a job, not a workflow.`,
        `${path}.${kind}`,
      );
    }
    validateSpec(spec, `${path}.${kind}`, now, defaults);
    callbacks[kind] = spec as Obj;
  }
  if (Object.keys(callbacks).length === 0) {
    throw invalidWorkflow(
      'callbacks must define at least one of on_complete, on_success, on_failure.',
      path,
    );
  }
  return callbacks;
}

/**
 * A graph step's request: the step without its graph fields (its `id` names
 * the step, not the job), over the workflow's `options` when it is a job.
 */
function graphStepSpec(step: Obj, workflowOptions: Obj | undefined): Obj {
  const { id: _id, depends_on: _deps, ...spec } = step;
  if (workflowOptions === undefined || isWorkflowBody(spec)) return spec;
  const own = isObject(spec.options) ? spec.options : {};
  return { ...spec, options: { ...workflowOptions, ...own } };
}

/**
 * Every job request of a workflow with its path, nested workflows'
 * included: what the engine checks against the schema registry at creation.
 */
export function* jobSpecs(
  workflow: WorkflowRecord,
  now: number,
  defaults: EnqueueDefaults,
  prefix = '',
): Generator<{ spec: Obj; path: string }> {
  const listName = workflow.type === 'group' || workflow.type === 'batch' ? 'jobs' : 'steps';
  for (const step of workflow.steps) {
    const path = at(prefix, `${listName}[${step.index}]`);
    if (isWorkflowBody(step.spec)) {
      const depth = (workflow.depth ?? 1) + 1;
      const child = buildWorkflow(step.spec, now, defaults, { depth, path });
      yield* jobSpecs(child, now, defaults, path);
    } else yield { spec: step.spec, path };
  }
  for (const [kind, spec] of Object.entries(workflow.callbacks ?? {})) {
    yield { spec: spec!, path: at(prefix, `callbacks.${kind}`) };
  }
}
