/** Running the `tsbuckets` command as a process, through tsx, from the repository's root. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const kRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** What a run printed and how it ended. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run `tsbuckets ...args` (standard error is not a TTY: no progress bar). */
export function runCli(args: ReadonlyArray<string>, stdin?: string): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      { cwd: kRoot, env: { ...process.env, NO_COLOR: '1', COLUMNS: '100' } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(stdin ?? '');
  });
}

/** The summary with its timing (which varies) replaced by `<time>`. */
export function maskTiming(text: string): string {
  return text.replace(/in [\d.,]+ s \([\d,]+ measurements\/s\)/gu, 'in <time>');
}
