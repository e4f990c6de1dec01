import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * One tenant file of a tenants directory (`<tenantsDir>/<name>.yaml`): the company's key, a file
 * sink named `out` writing to `sinkPath` (or `sink`, a YAML flow mapping of another sink), and any
 * further YAML lines of the tenant's sections.
 */
export function writeTenantFile(
  tenantsDir: string,
  name: string,
  tenant: { apiKey: string; sinkPath?: string; sink?: string; lines?: readonly string[] },
): void {
  writeFileSync(
    join(tenantsDir, `${name}.yaml`),
    [
      `api: { apiKey: "${tenant.apiKey}" }`,
      ...(tenant.lines ?? []),
      `sinks: [${tenant.sink ?? `{ name: out, type: file, path: "${tenant.sinkPath}" }`}]`,
      '',
    ].join('\n'),
  );
}
