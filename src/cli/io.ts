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
