/**
 * A workflow drawn as a graph: steps in columns by dependency depth (a
 * chain is a row, a group a column, a batch a column then its callbacks),
 * edges from each dependency, every node coloured and labelled by state
 * and linked to its job.
 */

export interface GraphStep {
  key: string;
  label: string;
  state: string;
  jobId: string | null;
  dependsOn: string[];
}

const W = 168;
const H = 46;
const GAP_X = 56;
const GAP_Y = 16;

/** Column of each step: 0 without dependencies, else one past its deepest dependency. */
export function levels(steps: GraphStep[]): Map<string, number> {
  const byKey = new Map(steps.map((s) => [s.key, s]));
  const level = new Map<string, number>();
  const visit = (key: string, seen: Set<string>): number => {
    const known = level.get(key);
    if (known !== undefined) return known;
    if (seen.has(key)) return 0; // a cycle cannot be stored; draw it flat rather than loop
    seen.add(key);
    const deps = byKey.get(key)?.dependsOn.filter((d) => byKey.has(d)) ?? [];
    const value = deps.length === 0 ? 0 : 1 + Math.max(...deps.map((d) => visit(d, seen)));
    level.set(key, value);
    return value;
  };
  for (const step of steps) visit(step.key, new Set());
  return level;
}

export function WorkflowGraph({ steps, title }: { steps: GraphStep[]; title: string }) {
  const level = levels(steps);
  const columns: GraphStep[][] = [];
  for (const step of steps) {
    const column = level.get(step.key)!;
    columns[column] = [...(columns[column] ?? []), step];
  }
  const position = new Map<string, { x: number; y: number }>();
  for (const [c, column] of columns.entries()) {
    for (const [r, step] of (column ?? []).entries()) {
      position.set(step.key, { x: c * (W + GAP_X), y: r * (H + GAP_Y) });
    }
  }
  const width = Math.max(1, columns.length) * (W + GAP_X) - GAP_X + 8;
  const height = Math.max(1, ...columns.map((c) => c.length)) * (H + GAP_Y) - GAP_Y + 8;
  return (
    <div class="graph scroll">
      <svg
        width={width}
        height={height}
        viewBox={`-4 -4 ${width} ${height}`}
        role="img"
        aria-label={`${title}: ${steps.length} steps; the step list follows`}
      >
        {steps.flatMap((step) =>
          step.dependsOn
            .filter((d) => position.has(d))
            .map((dep) => {
              const from = position.get(dep)!;
              const to = position.get(step.key)!;
              const x1 = from.x + W;
              const y1 = from.y + H / 2;
              const x2 = to.x;
              const y2 = to.y + H / 2;
              const mid = (x1 + x2) / 2;
              return (
                <path
                  key={`${dep}->${step.key}`}
                  class="edge"
                  d={`M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 4},${y2}`}
                />
              );
            }),
        )}
        {steps.map((step) => {
          const { x, y } = position.get(step.key)!;
          const node = (
            <g class={`node state-${step.state}`} transform={`translate(${x},${y})`}>
              <rect width={W} height={H} rx="6" />
              <text x="10" y="19" class="node-label">
                {step.label.length > 22 ? `${step.label.slice(0, 21)}…` : step.label}
              </text>
              <text x="10" y="36" class="node-state">
                {step.state}
              </text>
            </g>
          );
          return step.jobId ? (
            <a
              key={step.key}
              href={`#/jobs/${encodeURIComponent(step.jobId)}`}
              aria-label={`${step.label}: ${step.state}`}
            >
              {node}
            </a>
          ) : (
            <g key={step.key}>{node}</g>
          );
        })}
      </svg>
    </div>
  );
}
