import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DiagnosticSeverity, Parser } from '@asyncapi/parser';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildCloudEvent, eventsConfigSchema } from '../../src/events/cloudEvent.js';
import { eventSchemaFiles, SCHEMA_FILE } from '../../src/events/eventSchemas.js';
import type { LogKind } from '../../src/logs.js';
import { asyncApiDocument } from '../../src/sinks/asyncApiDocument.js';
import { addDataSchema } from '../../src/sinks/dataSchemaAttribute.js';
import { sinkConfigSchema } from '../../src/sinks/sinkRegistry.js';
import { runCliInProcess as runCli } from '../support/runCli.js';
import { startTestSimulator } from '../support/testSimulator.js';

const ROOT = join(import.meta.dirname, '..', '..');

function validator() {
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false });
  addFormats.default(ajv);
  for (const schema of Object.values(eventSchemaFiles())) ajv.addSchema(schema);
  return (name: string, value: unknown) => {
    const validate = ajv.getSchema(name)!;
    return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
  };
}

describe('the published event schemas', () => {
  it('accept every event the simulator produces, under the default and a custom type prefix', async () => {
    const simulator = await startTestSimulator({
      seed: 7,
      careers: 8,
      skills: 6,
      eventsPerHour: 3_000,
      historyHours: 3,
      identityProviderShare: 0.2,
      skillShare: 0.2,
    });
    const check = validator();
    const entries = simulator.visibleEntries();
    const logs = new Set(entries.map((e) => e.log));
    expect(logs).toEqual(new Set<LogKind>(['career', 'skill', 'identity_provider']));
    for (const config of [
      eventsConfigSchema.parse({}),
      eventsConfigSchema.parse({ typePrefix: 'org.acme-hr.skills' }),
    ]) {
      const problems: string[] = [];
      for (const { log, objectId, entry } of entries) {
        const event = buildCloudEvent(
          { tenant: 'default', log, objectId: objectId ?? '', entry: entry as { id: string }, baseUrl: simulator.url },
          config,
        );
        const json = JSON.parse(JSON.stringify(event)) as unknown;
        for (const p of check(SCHEMA_FILE('cloudevent'), json)) problems.push(`${event.id}: ${p}`);
        for (const p of check(SCHEMA_FILE(`${log}-data`), event.data)) problems.push(`${event.id} data: ${p}`);
      }
      expect(problems).toEqual([]);
    }
    expect(entries.length).toBeGreaterThan(1_000);
  });

  it("reject what breaks the envelope, and check data against its log's schema", () => {
    const check = validator();
    const entry = { id: 'act_1', event: 'baseline', performedAt: '2026-01-01T00:00:00Z' };
    const event = buildCloudEvent(
      { tenant: 'default', log: 'skill', objectId: 'sk_1', entry, baseUrl: 'https://x.example' },
      eventsConfigSchema.parse({}),
    );
    expect(check(SCHEMA_FILE('cloudevent'), { ...event, unknownattr: 'kept' })).toEqual([]);
    expect(check(SCHEMA_FILE('cloudevent'), { ...event, specversion: '0.3' })).not.toEqual([]);
    expect(check(SCHEMA_FILE('cloudevent'), { ...event, time: 'yesterday' })).not.toEqual([]);
    expect(check(SCHEMA_FILE('cloudevent'), { ...event, data: { event: 'baseline' } })).not.toEqual([]);
    expect(check(SCHEMA_FILE('cloudevent'), { ...event, data: { ...entry, brandNewField: [1] } })).toEqual([]);
  });

  it('require the tenant attribute, a tenant name, on every event', () => {
    const check = validator();
    const entry = { id: 'act_1', event: 'user_created', performedAt: null };
    const event = buildCloudEvent(
      { tenant: 'acme-corp', log: 'identity_provider', objectId: '', entry, baseUrl: 'https://x.example' },
      eventsConfigSchema.parse({}),
    );
    expect(event.tenant).toBe('acme-corp');
    expect(check(SCHEMA_FILE('cloudevent'), event)).toEqual([]);
    const { tenant: _tenant, ...withoutTenant } = event;
    expect(check(SCHEMA_FILE('cloudevent'), withoutTenant)).toEqual([" must have required property 'tenant'"]);
    for (const tenant of ['', 'Acme', 'a b', 'x'.repeat(64), 7])
      expect(check(SCHEMA_FILE('cloudevent'), { ...event, tenant }), JSON.stringify(tenant)).not.toEqual([]);
    // Where a sink copies attributes into headers or fields, the AsyncAPI document says the tenant is one.
    const document = JSON.stringify(asyncApiDocument());
    expect(document).toContain('specversion, tenant, entryid');
    const redis = asyncApiDocument() as {
      components: { messages: Record<string, { payload: { required: string[] } }> };
    };
    expect(redis.components.messages.redisStreamEntry?.payload.required).toContain('tenant');
  });

  it('the AsyncAPI 3.0 document parses cleanly, as generated and as published in docs/events', async () => {
    // The published file is the generated document (compared as data here, not as text), so
    // parsing one proves both; the parser costs seconds a document.
    const generated = asyncApiDocument();
    expect(parseYaml(readFileSync(join(ROOT, 'docs', 'events', 'asyncapi.yaml'), 'utf8'))).toEqual(
      JSON.parse(JSON.stringify(generated)),
    );
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(generated));
    // Information and hints (such as "3.1.0 exists") are fine; errors and warnings are not.
    expect(
      diagnostics
        .filter((d) => Number(d.severity) <= Number(DiagnosticSeverity.Warning))
        .map((d) => `${d.code} ${d.message} at ${d.path.join('.')}`),
    ).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
    expect(
      document
        ?.channels()
        .all()
        .map((c) => c.id())
        .sort(),
    ).toEqual(
      ['feedPage', 'feedStream', 'mqttTopic', 'natsSubject', 'rabbitmqRoutingKey', 'redisStream', 'webhook'].sort(),
    );
    const webhook = document
      ?.messages()
      .all()
      .find((m) => m.id() === 'webhookEvent');
    expect(JSON.stringify(webhook?.headers()?.json())).toContain('HMAC-SHA256');
  });

  it("dataschema, when a sink sets it, points at the data schema of the event's log and validates", () => {
    const check = validator();
    const entry = { id: 'act_2', event: 'user_created', performedAt: null };
    const event = buildCloudEvent(
      { tenant: 'default', log: 'identity_provider', objectId: '', entry, baseUrl: 'https://x.example' },
      eventsConfigSchema.parse({}),
    );
    const json = addDataSchema(JSON.stringify(event), 'identity_provider', 'https://schemas.example.com/changefeed/');
    const parsed = JSON.parse(json) as Record<string, unknown>;
    expect(parsed.dataschema).toBe('https://schemas.example.com/changefeed/identity_provider-data.schema.json');
    expect(Object.keys(parsed).at(-1)).toBe('data');
    expect(check(SCHEMA_FILE('cloudevent'), parsed)).toEqual([]);
    const base = { name: 'w', type: 'webhook', url: 'https://hooks.example.com/x' };
    expect(sinkConfigSchema.safeParse({ ...base, dataschema: 'https://schemas.example.com/changefeed/' }).success).toBe(
      true,
    );
    expect(sinkConfigSchema.safeParse({ ...base, dataschema: 'https://schemas.example.com/changefeed' }).success).toBe(
      false,
    );
    expect(
      sinkConfigSchema.safeParse({ name: 'f', type: 'file', path: 'x', dataschema: 'https://s.example/' }).success,
    ).toBe(false);
  });

  it('changefeed schema prints the files of docs/events', async () => {
    const { status, stdout } = await runCli(['schema', 'asyncapi']);
    expect(status).toBe(0);
    expect(stdout).toBe(readFileSync(join(ROOT, 'docs', 'events', 'asyncapi.yaml'), 'utf8'));
    const unknown = await runCli(['schema', 'nope']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('no schema "nope"; use one of cloudevent, career-data');
  });
});
