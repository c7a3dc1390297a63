/**
 * The documentation is self-contained: README.md, docs/*.md, bench/README.md and the examples cite only
 * files of the repository, and every relative link (with its `#anchor`) leads to a file and heading that
 * exist.
 */
import { readdir, readFile } from 'node:fs/promises';

import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);

async function documents(): Promise<string[]> {
  const docs = (await readdir(new URL('docs/', root)))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  const examples = (await readdir(new URL('examples/', root))).map((f) => `examples/${f}`);
  return ['README.md', 'bench/README.md', ...docs, ...examples];
}

/** GitHub's heading anchor: lower case, punctuation dropped (but `-` and `_`), spaces as `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const line of markdown.split('\n')) {
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (m) out.add(slug(m[1]!));
  }
  return out;
}

describe('documentation', () => {
  it('cites no file outside the repository', async () => {
    const offenders: string[] = [];
    for (const file of await documents()) {
      const text = await readFile(new URL(file, root), 'utf8');
      text.split('\n').forEach((line, i) => {
        if (/\bSPEC\b|INTERNALS|shared\/docs|\.\.\/shared|BSONCOLUMN\.md|MONGODB-[A-Z]/.test(line)) {
          offenders.push(`${file}:${i + 1}: ${line.trim()}`);
        }
      });
    }
    expect(offenders).toEqual([]);
  });

  it('has relative links whose files and anchors exist', async () => {
    const broken: string[] = [];
    for (const file of await documents()) {
      if (!file.endsWith('.md')) continue;
      const text = await readFile(new URL(file, root), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const url = path === '' ? new URL(file, root) : new URL(path, new URL(file, root));
        let linked: string;
        try {
          linked = await readFile(url, 'utf8');
        } catch {
          broken.push(`${file}: ${target!} (no such file)`);
          continue;
        }
        if (anchor !== undefined && !anchors(linked).has(anchor))
          broken.push(`${file}: ${target!} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('computes anchors as GitHub does', () => {
    expect(slug('1.2 The bucket `_id`')).toBe('12-the-bucket-_id');
    expect(slug('3. `control.min` and `control.max`')).toBe('3-controlmin-and-controlmax');
    expect(slug('5.7 Memory threshold')).toBe('57-memory-threshold');
  });
});
