/**
 * Executable entry: `node packages/conformance/src/bin.ts --url ... --suites ...`.
 * Sets process.exitCode instead of calling process.exit so buffered output is flushed.
 */
import { conformanceMain } from './cli.ts';

process.exitCode = await conformanceMain(process.argv.slice(2));
