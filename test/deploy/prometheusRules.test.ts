import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ProcessMetrics } from '../../src/observe/processMetrics.js';
import { promtool } from '../support/metricsText.js';

/**
 * deploy/prometheus/alerts.yaml checked and unit-tested with promtool (alerts.test.yaml), and the
 * alerts and the Grafana dashboard read against the metrics the daemon exports: a renamed metric
 * must not leave an alert or a panel silently empty.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const RULES_DIR = join(ROOT, 'deploy', 'prometheus');
const DASHBOARD = JSON.parse(readFileSync(join(ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as {
  templating: { list: { name: string; type: string; query?: unknown }[] };
  panels: { title: string; targets: { expr: string }[] }[];
};
const RULES = parseYaml(readFileSync(join(RULES_DIR, 'alerts.yaml'), 'utf8')) as {
  groups: { rules: { alert: string; expr: string }[] }[];
};

function runPromtool(binary: string, args: string[]): { status: number | null; output: string } {
  const run = spawnSync(binary, args, { cwd: RULES_DIR, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** Metric families the daemon can export, with the names of their histogram series. */
async function exportedNames(): Promise<{ all: Set<string>; withTenant: Set<string> }> {
  const metrics = new ProcessMetrics();
  // The first scrape adds Node's and the process's metrics.
  await metrics.metrics();
  const families = await metrics.registry.getMetricsAsJSON();
  const all = new Set<string>();
  const withTenant = new Set<string>();
  for (const family of families) {
    const names =
      family.type.toString() === 'histogram'
        ? ['_bucket', '_sum', '_count'].map((suffix) => family.name + suffix)
        : [family.name];
    const labelNames = (metrics.registry.getSingleMetric(family.name) as unknown as { labelNames?: string[] })
      .labelNames;
    for (const name of names) {
      all.add(name);
      if (labelNames?.includes('tenant')) withTenant.add(name);
    }
  }
  return { all, withTenant };
}

/** Metric names a PromQL expression reads (of this project's families, Node's and the process's). */
const metricsIn = (expr: string): string[] =>
  [...expr.matchAll(/\b((?:changefeed|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1] as string);

describe('alerts and dashboards as files', () => {
  it('alerts.yaml passes promtool check rules, and its unit tests pass promtool test rules', () => {
    const binary = promtool('promtool check/test rules');
    if (!binary) return;
    const check = runPromtool(binary, ['check', 'rules', 'alerts.yaml']);
    expect(check.status, check.output).toBe(0);
    expect(check.output).toContain('SUCCESS');
    const test = runPromtool(binary, ['test', 'rules', 'alerts.test.yaml']);
    expect(test.status, test.output).toBe(0);
    expect(test.output).toContain('SUCCESS');
  });

  it('has the alerts an on-call engineer needs, each tested, each reading metrics the daemon exports', async () => {
    const alerts = RULES.groups.flatMap((g) => g.rules);
    expect(alerts.map((a) => a.alert)).toEqual(
      expect.arrayContaining([
        'ChangefeedSinkDown',
        'ChangefeedSinkDisabled',
        'ChangefeedReadBudgetExhausted',
        'ChangefeedFreshnessGoalMissed',
        'ChangefeedDeadLettersGrowing',
        'ChangefeedLeasesChurning',
        'ChangefeedTenantHeldNowhere',
      ]),
    );
    const tests = readFileSync(join(RULES_DIR, 'alerts.test.yaml'), 'utf8');
    const { all } = await exportedNames();
    for (const alert of alerts) {
      expect(tests, `${alert.alert} has a unit test`).toContain(`alertname: ${alert.alert}\n`);
      for (const name of metricsIn(alert.expr)) expect(all, `${alert.alert} reads ${name}`).toContain(name);
    }
  });

  it('the Grafana dashboard has tenant and instance variables, used in every panel query', async () => {
    const variables = DASHBOARD.templating.list.filter((v) => v.type === 'query').map((v) => v.name);
    expect(variables).toEqual(expect.arrayContaining(['tenant', 'instance']));
    const { all, withTenant } = await exportedNames();
    const targets = DASHBOARD.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));
    expect(targets.length).toBeGreaterThan(20);
    for (const { panel, expr } of targets) {
      const names = metricsIn(expr);
      expect(names.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) {
        expect(all, `${panel} reads ${name}`).toContain(name);
        // Every selector of the expression, not just one of them.
        const selector = new RegExp(`\\b${name}\\{([^}]*)\\}`).exec(expr)?.[1] ?? '';
        expect(selector, `${panel}: ${name} selects $instance`).toContain('instance=~"$instance"');
        if (withTenant.has(name)) expect(selector, `${panel}: ${name} selects $tenant`).toContain('tenant=~"$tenant"');
      }
    }
  });
});
