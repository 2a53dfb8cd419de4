/** `ojs workflows get|cancel`: a workflow's state and steps. */
import type { Workflow } from '@ojs/sdk';
import { Command } from 'commander';
import { action } from '../actions.ts';
import type { Cli } from '../context.ts';
import type { Io } from '../io.ts';
import { details, table } from '../output.ts';

function show(workflow: Workflow): string {
  const { steps, ...rest } = workflow;
  let text = details(rest as Record<string, unknown>, [
    'id',
    'name',
    'type',
    'state',
    'steps_total',
    'steps_completed',
    'created_at',
    'completed_at',
  ]);
  if (steps && steps.length > 0) {
    const rows = steps.map((step, i) => ({
      ...step,
      step: step.id ?? String(step.index ?? i),
      depends_on: step.depends_on?.join(','),
    }));
    text += `\n${table(rows, [
      ['step', 'STEP'],
      ['type', 'TYPE'],
      ['state', 'STATE'],
      ['job_id', 'JOB'],
      ['depends_on', 'DEPENDS ON'],
    ])}`;
  }
  return text;
}

export function workflowsCommand(io: Io): Command {
  const workflows = new Command('workflows').description('inspect and cancel workflows');
  workflows.addCommand(
    new Command('get')
      .description('a workflow with the state of each step')
      .argument('<id>')
      .action(
        action(io, async (cli: Cli, [id]) => {
          const workflow = await cli.client.getWorkflow(id!);
          cli.print(workflow, () => show(workflow));
        }),
      ),
  );
  workflows.addCommand(
    new Command('cancel')
      .description('cancel a workflow and its unfinished jobs')
      .argument('<id>')
      .action(
        action(io, async (cli: Cli, [id]) => {
          const workflow = await cli.client.cancelWorkflow(id!);
          cli.print(workflow, () => `workflow ${workflow.id} ${workflow.state}\n`);
        }),
      ),
  );
  return workflows;
}
