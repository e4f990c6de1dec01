import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean }>;
};

// npm ci prints EBADENGINE for any locked package whose engines range excludes the running Node;
// a user on our documented minimum must see none, so each range must admit that minimum.
describe('npm ci on the documented minimum Node', () => {
  const minimum = semver.minVersion(pkg.engines.node)?.version ?? '';

  it('every locked package admits the minimum Node that package.json declares', () => {
    expect(minimum).not.toBe('');
    const refusing = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && entry.engines && !Array.isArray(entry.engines) && entry.engines.node)
      .filter(([, entry]) => !semver.satisfies(minimum, (entry.engines as { node: string }).node))
      .map(([path, entry]) => `${path} wants node ${(entry.engines as { node: string }).node}`);
    expect(refusing).toEqual([]);
  });
});

// npm 11 warns on every command about project config keys it does not know ("will stop working
// in the next major version"); node-gyp and prebuild-install settings live elsewhere.
describe('the project .npmrc', () => {
  const KNOWN_TO_NPM = new Set(['fund', 'audit', 'engine-strict', 'save-exact', 'registry', 'update-notifier']);

  it('holds only keys npm itself knows', () => {
    const keys = readFileSync(join(ROOT, '.npmrc'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => line.split('=')[0]?.trim());
    expect(keys.filter((key) => !KNOWN_TO_NPM.has(key ?? ''))).toEqual([]);
  });

  it('builds better-sqlite3 from source through .prebuild-installrc, not through an npm config key', () => {
    expect(readFileSync(join(ROOT, '.prebuild-installrc'), 'utf8')).toMatch(/^buildFromSource=true$/m);
  });
});
