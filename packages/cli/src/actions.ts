/**
 * How a command's handler is wired into commander: positional arguments,
 * its own options, and a Cli (connection + output) closed afterwards.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { Cli, DEFAULT_BATCH_SIZE, type GlobalOptions } from './context.ts';
import type { Io } from './io.ts';

export type Action = (cli: Cli, args: string[], options: Record<string, unknown>) => Promise<void>;

/** Wraps a command's handler: a Cli from the global options, closed afterwards. */
export function action(io: Io, handler: Action) {
  return async (...received: unknown[]) => {
    const command = received.at(-1) as Command;
    const options = command.opts();
    const cli = new Cli(io, command.optsWithGlobals() as GlobalOptions);
    const args = received.slice(0, -2).flatMap((a) => (Array.isArray(a) ? a : [a])) as string[];
    try {
      await handler(
        cli,
        args.filter((a) => a !== undefined),
        options,
      );
    } finally {
      await cli.close();
    }
  };
}

/** An integer option parser (commander names the option in its error). */
export function integer(min = 0) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min) {
      throw new InvalidArgumentError(`It must be an integer >= ${min}.`);
    }
    return n;
  };
}

/** `--batch-size`: jobs per request of a bulk action (the progress bar advances per request). */
export const BATCH_SIZE_OPTION = [
  '--batch-size <n>',
  'jobs per request of the bulk action',
  integer(1),
  DEFAULT_BATCH_SIZE,
] as const;
