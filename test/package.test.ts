/**
 * What the published package promises its users: the driver is an optional peer (an embedded-only user
 * does not install it), the licence file matches `license`, and no source maps ship the whole source.
 */
import { readFile } from 'node:fs/promises';

import { describe, expect, it } from 'vitest';

import tsupConfig from '../tsup.config.js';

const root = new URL('../', import.meta.url);

interface PackageJson {
  readonly license: string;
  readonly files: readonly string[];
  readonly dependencies: Readonly<Record<string, string>>;
  readonly devDependencies: Readonly<Record<string, string>>;
  readonly peerDependencies: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta: Readonly<Record<string, { readonly optional?: boolean }>>;
}

async function packageJson(): Promise<PackageJson> {
  return JSON.parse(await readFile(new URL('package.json', root), 'utf8')) as PackageJson;
}

describe('package', () => {
  it('makes mongodb an optional peer dependency, installed for the tests only', async () => {
    const pkg = await packageJson();
    expect(Object.keys(pkg.dependencies)).not.toContain('mongodb');
    expect(pkg.peerDependencies.mongodb).toMatch(/^\^7\./);
    expect(pkg.peerDependenciesMeta.mongodb).toStrictEqual({ optional: true });
    expect(pkg.devDependencies.mongodb).toBeDefined();
  });

  it('ships an Apache-2.0 LICENSE matching the license field', async () => {
    const pkg = await packageJson();
    expect(pkg.license).toBe('Apache-2.0');
    const text = await readFile(new URL('LICENSE', root), 'utf8');
    expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(text).toContain('END OF TERMS AND CONDITIONS');
  });

  it('builds without source maps', () => {
    const configs = Array.isArray(tsupConfig) ? tsupConfig : [tsupConfig];
    for (const config of configs) {
      expect(typeof config === 'function' ? 'function' : config.sourcemap).toBe(false);
    }
  });
});
