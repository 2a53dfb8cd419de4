/**
 * One-line explanations of results, shared by both formats: which step (or behavioural
 * assertion) failed first, at which path, expected versus actual.
 */
import { unquoted } from './gofmt.ts';
import type { StepResult, TestResult } from './types.ts';

function stepLabel(step: StepResult): string {
  if (step.phase === 'assertion') return `${step.id} (${step.action})`;
  const phase = step.phase === 'test' ? 'step' : `${step.phase} step`;
  let path = '';
  if (step.url) {
    try {
      const url = new URL(step.url);
      path = ` ${url.pathname}${url.search}`;
    } catch {
      path = ` ${step.url}`;
    }
  }
  return `${phase} ${step.id} (${step.action}${path})`;
}

/** Names the first failure of a test in one line (seed §8.4 `reason`), or undefined. */
export function failureReason(steps: StepResult[]): string | undefined {
  for (const step of steps) {
    if (step.status === 'pass' || step.phase === 'teardown') continue;
    const first = step.failures[0];
    if (!first) continue;
    let detail = first.message;
    if (
      first.path !== 'request' &&
      !detail.includes(first.expected) &&
      !detail.includes(unquoted(first.expected))
    )
      detail += ` [expected ${first.expected}]`;
    const more = step.failures.length > 1 ? ` (+${step.failures.length - 1} more)` : '';
    return `${stepLabel(step)}: ${first.path}: ${detail}${more}`;
  }
  return undefined;
}

/** The result's own reason (seed runner, skips) or one derived from its steps. */
export function reasonOf(result: TestResult): string {
  if (result.reason) return result.reason;
  return failureReason(result.steps) ?? (result.status === 'pass' ? 'passed' : result.status);
}
