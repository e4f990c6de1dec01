import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHANGEFEED_VERSION } from '../../src/version.js';

const ROOT = join(import.meta.dirname, '..', '..');
const DOCKERFILE = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

/** The LABEL instructions of the runtime stage (the image shipped), continuation lines joined. */
function runtimeLabels(dockerfile: string): Map<string, string> {
  const runtime = dockerfile.slice(dockerfile.search(/^FROM .* AS runtime$/m)).replace(/\\\n/g, ' ');
  const labels = new Map<string, string>();
  for (const line of runtime.split('\n').filter((l) => /^LABEL\b/.test(l)))
    for (const [, key, value] of line.matchAll(/([\w.-]+)="([^"]*)"/g)) labels.set(key!, value!);
  return labels;
}

describe('the version', () => {
  it("labels the image with package.json's version (org.opencontainers.image.version)", () => {
    expect(runtimeLabels(DOCKERFILE).get('org.opencontainers.image.version')).toBe(PACKAGE.version);
  });

  it('is read from package.json, the one place it is written', () => {
    expect(CHANGEFEED_VERSION).toBe(PACKAGE.version);
  });
});
