/**
 * Where a command prints: results on standard output, progress and diagnostics on standard error.
 * Injected so that tests run commands in process and read what they printed.
 *
 * @packageDocumentation
 */
import type { Readable, Writable } from 'node:stream';

/** A command's streams. */
export interface CommandIo {
  /** Print a result line (a newline is added). */
  out(text: string): void;
  /** Print a diagnostic line on standard error (a newline is added). */
  warn(text: string): void;
  /** Standard error, for the progress bar (drawn only when it is a TTY). */
  readonly err: Writable & { readonly isTTY?: boolean };
  /** Standard input (`-` as a file name). */
  readonly stdin: Readable;
}

/**
 * The process's streams.
 *
 * @returns the io of the running process.
 */
export function processIo(): CommandIo {
  // A reader that stops early (`tsbuckets inspect ... | head`) closes the pipe: what is left to print has
  // no reader, so the command ends there, quietly, as command-line tools do, not on an unhandled EPIPE.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(process.exitCode ?? 0);
  });
  return {
    out: (text) => {
      process.stdout.write(`${text}\n`);
    },
    warn: (text) => {
      process.stderr.write(`${text}\n`);
    },
    err: process.stderr,
    stdin: process.stdin,
  };
}
