import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appConfigSchema } from '../../src/config/appConfigSchema.js';
import type { ChangefeedDaemon } from '../../src/daemon/changefeedDaemon.js';
import type { Simulator } from '../../src/simulator/index.js';
import type { WebhookReceiver } from '../../src/receiver/webhookReceiver.js';
import { startSimulator } from '../../src/simulator/index.js';
import { createDaemon } from '../support/daemonHarness.js';
import { findBinary, missingBinary, skipOrFail } from '../support/requiredBinary.js';
import { makeTempDir } from '../support/tempDir.js';
import { SECRET, startScriptedReceiver } from '../support/webhookHarness.js';

const OPERATOR_TOKEN = 'operator-token-0123456789';
const READER_TOKEN = 'read-only-token-0123456789';
/** What the refusing receiver answers: it must show as text, never run. */
const HOSTILE_ANSWER = '<script>window.__injected = 1</script><img src=x onerror="window.__injected = 2">';
const SHOTS = join(import.meta.dirname, '../../test-results');
const skipped = skipOrFail('the console browser test', missingBinary('chromium'));

describe.skipIf(skipped !== undefined)('the operator console in a real browser', () => {
  // Started here, not with the per-test helpers, which close theirs after each test: these serve every step.
  let simulator: Simulator;
  let hook: WebhookReceiver;
  let daemon: ChangefeedDaemon;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let refuse = true;
  const cspViolations: string[] = [];
  let phase = '';

  beforeAll(async () => {
    // The service allows what the budget does (its default, 1,000 reads an hour, spaced the first
    // polls 3.6 s a request: 11 s of discovery before the first).
    simulator = await startSimulator({
      seed: 29,
      careers: 3,
      skills: 2,
      eventsPerHour: 3_600,
      historyHours: 1,
      readsPerHour: 36_000,
    });
    hook = await startScriptedReceiver({
      respond: () => (refuse ? { status: 422, body: HOSTILE_ANSWER } : { status: 204 }),
    });
    const stateDir = makeTempDir();
    const config = appConfigSchema.parse({
      api: { baseUrl: simulator.url, apiKey: simulator.apiKey, timeoutMs: 5_000 },
      watch: {
        careers: { discover: true },
        skills: { discover: true },
        startFrom: new Date(Date.now() - 10 * 60_000).toISOString(),
        pollIntervalSeconds: 1,
        schedule: { firstPollWithinSeconds: 1 },
      },
      budget: { readsPerHour: 36_000, reserve: 0 },
      sinks: [{ name: 'hook', type: 'webhook', url: hook.url, secret: SECRET }],
      stateDir,
      http: { port: 0 },
      console: {
        enabled: true,
        tokens: [
          { token: OPERATOR_TOKEN, role: 'operator' },
          { token: READER_TOKEN, role: 'read-only' },
        ],
      },
    });
    daemon = createDaemon(config);
    await daemon.start();
    base = `${daemon.healthUrl}/console`;
    mkdirSync(SHOTS, { recursive: true });
    context = await chromium.launchPersistentContext(makeTempDir(), {
      executablePath: findBinary('chromium'),
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1024, height: 720 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (message) => {
      // Labelled with the page and the step, so a violation names what caused it.
      if (/Content.Security.Policy/i.test(message.text()))
        cspViolations.push(`${page.url()} ${phase}: ${message.text()}`);
    });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await daemon?.stop();
    await hook?.close();
    await simulator?.close();
  });

  /** axe-core run in the page, as DevTools runs it: the page's CSP does not load it as a script. */
  async function expectAccessible(view: string): Promise<void> {
    const source = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    phase = 'axe';
    await page.evaluate(source);
    const violations = await page.evaluate(async () => {
      const axe = (
        globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string }[] }> } }
      ).axe;
      const result = await axe.run();
      return result.violations.map((v) => ({ id: v.id, impact: v.impact }));
    });
    const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(serious, `accessibility of ${view}`).toEqual([]);
    phase = 'after axe';
  }

  async function shoot(view: string): Promise<void> {
    phase = `shot ${view}`;
    await page.screenshot({ path: join(SHOTS, `console-${view}.png`), fullPage: true });
  }

  it('signs in, shows the tenant and its logs filling in', async () => {
    await page.goto(base);
    await expect.poll(() => page.url()).toContain('/console/sign-in');
    await shoot('sign-in');
    await page.getByLabel('Console token').fill('not-a-token-of-this-console');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('token: not a console token').waitFor();
    await page.getByLabel('Console token').fill(OPERATOR_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'default' }).waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === 'changefeed_console');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
    expect(cookie?.value).not.toContain(OPERATOR_TOKEN);
    await expect.poll(() => page.locator('tbody tr td').first().textContent()).toContain('running on this replica');
    await expectAccessible('tenants');
    await shoot('tenants');

    await page.getByRole('link', { name: 'default' }).click();
    // The table and the charts refresh themselves (htmx, every 5 s) as the first polls cover the
    // logs: the first poll's hour reaches the store with that poll (pollRecorder).
    await page.locator('tbody tr td', { hasText: 'active' }).first().waitFor({ timeout: 30_000 });
    await page.locator('svg.chart rect.bar').first().waitFor({ timeout: 30_000 });
    await expectAccessible('logs');
    await shoot('logs');
  }, 120_000);

  it('shows a dead letter as text when the receiver refuses, retries it once fixed, and it is delivered', async () => {
    await page.getByRole('link', { name: 'Dead letters' }).click();
    const firstRetry = page.getByRole('button', { name: /^Retry .* to hook$/ }).first();
    await expect
      .poll(
        async () => {
          await page.reload();
          return firstRetry.count();
        },
        { timeout: 30_000 },
      )
      .toBeGreaterThan(0);
    // The receiver's answer is on the page as text and ran nothing.
    await page.locator('details summary').first().click();
    await expect.poll(() => page.locator('pre').first().textContent()).toBe(HOSTILE_ANSWER);
    expect(await page.evaluate(() => (globalThis as unknown as { __injected?: number }).__injected)).toBeUndefined();
    await expectAccessible('dead-letters');
    await shoot('dead-letters');

    refuse = false;
    const row = page.locator('tr[data-event-id]').first();
    const eventId = await row.getAttribute('data-event-id');
    await row.getByRole('button').click();
    await page.getByText(/Re-queued 1 dead letter/).waitFor();
    await page.getByRole('button', { name: 'Retry all', exact: false }).first().click();
    await page.getByText(/Re-queued \d+ dead letters?/).waitFor();
    await page.getByRole('link', { name: 'Sinks' }).click();
    // Delivered by the daemon's engine: the sink's dead count drops to 0 and nothing is pending.
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator('tbody tr').first().locator('td').nth(7).textContent();
        },
        { timeout: 30_000 },
      )
      .toMatch(/^\s*0\s*$/);
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator('td[data-sink-delivered="hook"]').textContent();
        },
        { timeout: 30_000 },
      )
      .not.toMatch(/^\s*0\s*$/);
    await page.getByRole('link', { name: 'Dead letters' }).click();
    await expect.poll(() => page.locator(`tr[data-event-id="${eventId}"]`).count()).toBe(0);
    await page.getByRole('link', { name: 'Sinks' }).click();
    await expectAccessible('sinks');
    await shoot('sinks');
  }, 90_000);

  it('counts a replay, then queues it', async () => {
    await page.getByRole('link', { name: 'Replay' }).click();
    await page.getByLabel('Type').fill('<not a glob>');
    await page.getByRole('button', { name: 'Count events' }).click();
    await page.getByRole('link', { name: 'type' }).waitFor();
    await page.getByLabel('Type').fill('*');
    await page.getByRole('button', { name: 'Count events' }).click();
    const queue = page.getByRole('button', { name: /^Queue \d+ events?$/ });
    await queue.waitFor();
    const count = Number(/\d+/.exec((await queue.textContent()) ?? '')?.[0]);
    expect(count).toBeGreaterThan(0);
    await expectAccessible('replay');
    await shoot('replay');
    await queue.click();
    await page.getByText(`Queued ${count} event`).waitFor();
  }, 60_000);

  it('tails the live feed, filtered by type', async () => {
    await page.getByRole('link', { name: 'Live tail' }).click();
    const tail = page.locator('#tail');
    await expect.poll(() => tail.locator('li').count(), { timeout: 30_000 }).toBeGreaterThan(0);
    const seen = Number(await tail.getAttribute('data-received'));
    await expect
      .poll(async () => Number(await tail.getAttribute('data-received')), { timeout: 30_000 })
      .toBeGreaterThan(seen);
    await expectAccessible('tail');
    await shoot('tail');
    await page.getByLabel('Type').fill('*.career.*');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => tail.locator('li').count(), { timeout: 30_000 }).toBeGreaterThan(0);
    for (const text of await tail.locator('li').allTextContents()) expect(text).toContain('.career.');
  }, 60_000);

  it('shows a read-only token every view and no action, on a phone-sized screen', async () => {
    const phone = await context.browser()?.newContext();
    const reader = phone ? await phone.newPage() : await context.newPage();
    await context.clearCookies();
    await reader.setViewportSize({ width: 390, height: 844 });
    await reader.goto(`${base}/sign-in`);
    await reader.getByLabel('Console token').fill(READER_TOKEN);
    await reader.getByRole('button', { name: 'Sign in' }).click();
    await reader.getByText('Signed in: read-only').waitFor();
    await reader.goto(`${base}/tenants/default/dead-letters`);
    await reader.getByText('Your token is read-only').waitFor();
    expect(await reader.getByRole('button', { name: /Retry/ }).count()).toBe(0);
    await reader.goto(`${base}/tenants/default`);
    await reader.screenshot({ path: join(SHOTS, 'console-phone.png'), fullPage: true });
    await reader.close();
    expect(cspViolations, cspViolations.join('\n')).toEqual([]);
  }, 60_000);
});
