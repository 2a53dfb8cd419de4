/**
 * Executable entry: `node packages/conformance/src/bin.ts [--url ...] [--suites ...]`, or
 * `node packages/conformance/src/bin.ts validate [FILE|-] ...` for the Parser tier.
 * Sets process.exitCode instead of calling process.exit so buffered output is flushed.
 */
import { conformanceMain } from './cli.ts';
import { validateMain } from './validate-cli.ts';

const [first, ...rest] = process.argv.slice(2);
process.exitCode =
  first === 'validate'
    ? await validateMain(rest)
    : await conformanceMain(first === undefined ? [] : first === 'run' ? rest : [first, ...rest]);
