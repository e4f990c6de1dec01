import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The image's HEALTHCHECK, read from the Dockerfile. ECS, Swarm and autoheal replace a container
 * Docker calls "unhealthy": the check must be liveness (/healthz), never readiness (/readyz),
 * which fails while a sink is down or the key is revoked, things a restart does not fix.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const DOCKERFILE = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const SMOKE = readFileSync(join(ROOT, 'scripts', 'container', 'build-and-smoke.sh'), 'utf8');
const HEALTH_SERVER = readFileSync(join(ROOT, 'src', 'observe', 'healthServer.ts'), 'utf8');

/** The HEALTHCHECK instruction with its continuation lines joined. */
function healthcheck(dockerfile: string): string {
  const joined = dockerfile.replace(/\\\n/g, ' ');
  const lines = joined.split('\n').filter((line) => /^HEALTHCHECK\b/.test(line));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('the Dockerfile HEALTHCHECK', () => {
  const instruction = healthcheck(DOCKERFILE);

  it('probes /healthz (liveness), not /readyz', () => {
    expect(instruction).toContain('/healthz');
    expect(instruction).not.toContain('/readyz');
    expect(HEALTH_SERVER).toContain(`path === '/healthz'`);
  });

  it('asks the port the image serves on, over loopback, and gives the daemon time to start', () => {
    expect(instruction).toContain("'http://127.0.0.1:' + (process.env.CHANGEFEED_HTTP_PORT || 9464)");
    expect(DOCKERFILE).toMatch(/CHANGEFEED_HTTP_PORT=9464/);
    expect(instruction).toMatch(/--start-period=\d+s/);
  });

  it('is what the container smoke test expects of the image', () => {
    expect(SMOKE).toContain('HEALTHCHECK probes /healthz (liveness)');
    expect(SMOKE).toContain('test.includes("/healthz") && !test.includes("/readyz")');
  });
});
