/**
 * docs/stats.md shows numbers the engine reports: its serverStatus example is run as written (with the
 * `tsbuckets` import pointed at the sources) and must print the table that follows it, and its memory
 * formula must give the memoryUsage of the example.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { calculateObjectSize } from 'bson';
import { afterEach, describe, expect, it, vi } from 'vitest';

const root = new URL('../../', import.meta.url);

/** The first fenced block after `<!-- stats-example:<name> -->`, or the table when `table`. */
function section(markdown: string, name: string): string {
  const start = markdown.indexOf(`<!-- stats-example:${name} -->`);
  if (start < 0) throw new Error(`docs/stats.md has no stats-example:${name} marker`);
  const rest = markdown.slice(start);
  if (name === 'table') {
    const lines = rest.split('\n').slice(1);
    const first = lines.findIndex((l) => l.startsWith('|'));
    const end = lines.findIndex((l, i) => i > first && !l.startsWith('|'));
    return lines.slice(first, end).join('\n');
  }
  const match = /```[a-z]*\n([\s\S]*?)```/.exec(rest);
  if (match === null) throw new Error(`no code block after stats-example:${name}`);
  return match[1]!;
}

/** Rows of a markdown table (header and separator dropped): first cell text, the others numbers. */
function tableRows(table: string): Array<[string, ...number[]]> {
  return table
    .split('\n')
    .slice(2)
    .map((line) => {
      const [step, ...values] = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      return [step!, ...values.map(Number)];
    });
}

describe('docs/stats.md', () => {
  const scratch = new URL(`tmp/docs-stats-${process.pid}/`, root);
  afterEach(async () => {
    vi.restoreAllMocks();
    await rm(scratch, { recursive: true, force: true });
  });

  it('the serverStatus example prints the documented table, and the memory formula gives its numbers', async () => {
    const markdown = await readFile(new URL('docs/stats.md', root), 'utf8');
    // Arrange: the example as a user would write it, importing from the sources instead of the package.
    const source = pathToFileURL(fileURLToPath(new URL('src/index.ts', root))).href;
    const code = section(markdown, 'code').replace("from 'tsbuckets'", `from '${source}'`);
    expect(code).toContain(source);
    await mkdir(scratch, { recursive: true });
    const file = new URL('example.ts', scratch);
    await writeFile(file, code);
    const printed: unknown[][] = [];
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      printed.push(args);
    });

    // Act
    await import(/* @vite-ignore */ file.href);

    // Assert: the table, row by row.
    const rows = tableRows(section(markdown, 'table'));
    expect(rows).toHaveLength(5);
    expect(printed).toStrictEqual(rows);

    // The formula, with the example's series (31-character signature, 4 columns), gives its memoryUsage.
    const formula = section(markdown, 'formula');
    const open = /open bucket\s*=\s*(\d+) \+ 2 × len\(signature\) \+ (\d+) × columns/.exec(formula);
    const compressed = /\+ (\d+) \+ (\d+) × \(columns with a builder\)\s+only in the compressed format/.exec(
      formula,
    );
    const lists = /\+ (\d+)\s+once its map has encoded/.exec(formula);
    const flat = /− (\d+) − (\d+) × columns\s+only while control\.min\/max are in typed slots/.exec(formula);
    const kept = /\+ \((\d+) \+ \d+ × \(kept − 1\)\) × columns\s+only while it keeps measurements/.exec(
      formula,
    );
    const archived = /archived record =\s*(\d+) \+ 2 × len\(signature\)/.exec(formula);
    expect(open).not.toBeNull();
    expect(compressed).not.toBeNull();
    expect(lists).not.toBeNull();
    expect(kept).not.toBeNull();
    expect(flat).not.toBeNull();
    expect(archived).not.toBeNull();
    const signature = 'tsbuckets.weather'.length + 1 + calculateObjectSize({ '': 'a' });
    expect(signature).toBe(31);
    // The example writes the default (compressed) format over MemoryStorage, one measurement kept per
    // bucket, numbers and dates (typed min/max slots): no builder while new, the 4 columns' builders (and
    // the lists of a map that has encoded) once reopened from the stored document.
    const openBytes = (builders: number) =>
      Number(open![1]) +
      2 * signature +
      Number(open![2]) * 4 -
      Number(flat![1]) -
      Number(flat![2]) * 4 +
      Number(compressed![1]) +
      Number(compressed![2]) * builders +
      (builders > 0 ? Number(lists![1]) : 0) +
      Number(kept![1]) * 4;
    const archivedBytes = Number(archived![1]) + 2 * signature;
    const memory = rows.map((row) => row[7]);
    expect(memory).toStrictEqual([
      0,
      openBytes(0),
      openBytes(0) + archivedBytes,
      openBytes(0) + 2 * archivedBytes,
      openBytes(4) + archivedBytes,
    ]);
    expect(markdown).toContain(`= ${openBytes(0)}`);
    expect(markdown).toContain(`= ${openBytes(4)}`);
  });
});
