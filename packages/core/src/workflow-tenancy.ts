/**
 * A workflow's tenant (ext-multi-tenancy §2.2): every job of a workflow,
 * nested workflows' and callbacks' included, belongs to the workflow's
 * tenant. The request's tenant is written into each job request of the
 * body before the workflow is built, so the steps enqueued later (stored
 * as requests in the workflow record) carry it too; a step naming another
 * tenant is rejected like a job would be (assignTenant).
 */
import { isObject } from './is-object.ts';
import { assignTenant, DEFAULT_TENANT, isTenantId, type TenantScope } from './tenancy.ts';
import { isWorkflowBody } from './workflow-build.ts';
import type { WorkflowRecord } from './workflow-types.ts';

type Obj = Record<string, unknown>;

function tagSpec(spec: unknown, scope: TenantScope): unknown {
  if (!isObject(spec)) return spec;
  if (isWorkflowBody(spec)) return workflowBodyForTenant(spec, scope);
  const meta = isObject(spec.meta) ? { ...spec.meta } : {};
  assignTenant({ meta }, scope);
  return { ...spec, meta };
}

/** The workflow request with `scope`'s tenant in every job request it holds. */
export function workflowBodyForTenant(body: unknown, scope: TenantScope): unknown {
  if (!isObject(body)) return body;
  const tagged: Obj = { ...body };
  for (const list of ['steps', 'jobs']) {
    const items = body[list];
    if (Array.isArray(items)) tagged[list] = items.map((spec) => tagSpec(spec, scope));
  }
  if (isObject(body.callbacks)) {
    const callbacks: Obj = {};
    for (const [kind, spec] of Object.entries(body.callbacks)) {
      callbacks[kind] = tagSpec(spec, scope);
    }
    tagged.callbacks = callbacks;
  }
  return tagged;
}

/** The tenant a workflow belongs to: the one it was created for, else its first job's. */
export function workflowTenant(workflow: WorkflowRecord): string {
  if (workflow.tenant_id !== undefined) return workflow.tenant_id;
  for (const step of workflow.steps) {
    const meta = step.spec.meta;
    if (isObject(meta) && isTenantId(meta.tenant_id)) return meta.tenant_id;
  }
  return DEFAULT_TENANT;
}
