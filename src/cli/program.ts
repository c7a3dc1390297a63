/**
 * The `tsbuckets` command tree: `demo`, `ingest`, `advise`, `inspect`, `stats` (see `docs/cli.md`).
 *
 * Errors of tsbuckets (bad options, bad data, MongoDB failures) are printed as `tsbuckets: <message>` on
 * standard error with exit status 1; commander reports usage errors (unknown options, invalid values)
 * the same way with its own message.
 *
 * @packageDocumentation
 */
import { createRequire } from 'node:module';

import { Command } from 'commander';

import { TsBucketsError } from '../errors.js';
import { registerAdvise } from './advise.js';
import { registerDemo } from './demo.js';
import { registerIngest } from './ingest.js';
import { registerInspect } from './inspect.js';
import type { CommandIo } from './io.js';
import { registerStats } from './stats.js';

/**
 * The command tree.
 *
 * @param io - where commands print.
 * @returns the root command.
 */
export function buildProgram(io: CommandIo): Command {
  const program = new Command('tsbuckets')
    .description("MongoDB's time-series engine in process: ingest, advise on bucketing, inspect buckets")
    .version(packageVersion(), '-V, --version', 'print the version')
    .showHelpAfterError('(run with --help for usage)');
  registerDemo(program, io);
  registerIngest(program, io);
  registerAdvise(program, io);
  registerInspect(program, io);
  registerStats(program, io);
  return program;
}

/**
 * Run the command line.
 *
 * @param argv - `process.argv`.
 * @param io - where commands print.
 * @returns the exit status.
 */
export async function main(argv: ReadonlyArray<string>, io: CommandIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync([...argv]);
    return 0;
  } catch (error) {
    if (TsBucketsError.isTsBucketsError(error) || isSystemError(error)) {
      io.warn(`tsbuckets: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

/**
 * The package's version, from its `package.json`: two directories up from this module, in the sources
 * (`src/cli`) as in the build (`dist/cli`).
 */
function packageVersion(): string {
  const manifest = createRequire(import.meta.url)('../../package.json') as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}

function isSystemError(error: unknown): error is Error {
  return (
    error instanceof Error &&
    (typeof (error as { code?: unknown }).code === 'string' || error.name.startsWith('Mongo'))
  );
}
