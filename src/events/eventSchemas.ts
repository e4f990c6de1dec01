import { LOG_KINDS, type LogKind } from '../logs.js';

/**
 * JSON Schemas (draft-07, which AsyncAPI 3.0 schemas also are) of what the sinks carry: the
 * CloudEvent envelope (see cloudEvent.ts) and the `data` of each log, from the service's spec
 * (2.8 for every log, section 6 for each log's extra fields). The spec adds fields over time, so
 * unknown properties are allowed everywhere; it gives no types for the extra fields, so those are
 * described but not constrained. Published in docs/events/ (`npm run docs:events`) and printed by
 * `changefeed schema`.
 */
export type JsonSchema = Record<string, unknown>;

/** How one schema refers to another: a file name in docs/events, a component in the AsyncAPI document. */
export type SchemaRef = (name: SchemaName) => string;

export type SchemaName = 'cloudevent' | `${LogKind}-data`;

const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';
export const SCHEMA_FILE = (name: SchemaName): string => `${name}.schema.json`;

const nullableString = (description: string): JsonSchema => ({ type: ['string', 'null'], description });
const untyped = (description: string): JsonSchema => ({
  description: `${description} Type not specified by the service.`,
});

/** Spec 2.8: the fields every activity entry shares. */
const ENTRY_PROPERTIES: Record<string, JsonSchema> = {
  id: { type: 'string', minLength: 1, description: 'Opaque entry id; unique within its log.' },
  event: nullableString('Event type, lowercase snake case; null or absent when the service did not say.'),
  description: nullableString('Human-readable summary.'),
  performedById: nullableString(
    'Person who performed the change; null when it did not originate from a person in the service (always for the identity-provider log).',
  ),
  performedAt: nullableString('When the change happened, an ISO 8601 UTC timestamp; null when unknown.'),
};

/** Spec section 6: the extra fields of each log. */
const EXTRA_PROPERTIES: Record<LogKind, Record<string, JsonSchema>> = {
  career: {
    emailSent: untyped('Whether the change sent an email (the simulator sends a boolean).'),
    relatedPersonId: untyped('Person the change concerns.'),
    relatedSkillId: untyped('Skill the change concerns.'),
    relatedSectionId: untyped('Section of the career the change concerns.'),
    relatedLevelId: untyped('Level of the career the change concerns.'),
    bulkGroupId: untyped('Groups the rows of one bulk operation.'),
  },
  skill: {
    versionId: untyped('Version of the skill the entry is about.'),
    affectedUserCount: untyped('People the version affects.'),
    renewalOption: untyped('Renewal option of a renew_training entry.'),
  },
  identity_provider: {
    oldValue: untyped('Value before the change.'),
    newValue: untyped('Value after the change.'),
    payloadSummary: untyped('Summary of what the identity provider sent.'),
    source: untyped('The identity provider.'),
    externalMemberId: untyped("The member's id at the identity provider."),
    relatedPersonId: untyped('Person the change concerns.'),
    relatedPersonName: untyped('Name of that person.'),
    relatedGroupId: untyped('Group the change concerns.'),
    relatedGroupName: untyped('Name of that group.'),
  },
};

const EVENT_NOTES: Record<LogKind, string> = {
  career:
    'about 40 event types: lifecycle, settings, skills, sections, levels, groups, learnings, assignments, labels, flags',
  skill: 'exactly three: baseline, version_created, renew_training (a version log)',
  identity_provider:
    '13 event types: group lifecycle, user provisioning, permission changes, career assignment, membership; changes not originated in the service',
};

export function dataSchema(log: LogKind, options: { id?: string } = {}): JsonSchema {
  return {
    $schema: DRAFT_07,
    ...(options.id ? { $id: options.id } : {}),
    title: `${log} activity entry`,
    description:
      `The \`data\` of a ${log} event: the entry exactly as the service sent it (${EVENT_NOTES[log]}). ` +
      'Fields the service adds later are kept, so consumers must ignore what they do not know.',
    type: 'object',
    required: ['id'],
    properties: { ...ENTRY_PROPERTIES, ...EXTRA_PROPERTIES[log] },
    additionalProperties: true,
  };
}

/** The CloudEvent every sink carries, with `data` checked against its log's schema by the type. */
export function cloudEventSchema(ref: SchemaRef, options: { id?: string } = {}): JsonSchema {
  return {
    $schema: DRAFT_07,
    ...(options.id ? { $id: options.id } : {}),
    title: 'Change event (CloudEvents 1.0, JSON)',
    description:
      'One entry of an activity log as a CloudEvent in structured JSON mode. Extension attributes ' +
      'may be added later; consumers ignore what they do not know.',
    type: 'object',
    required: ['specversion', 'tenant', 'id', 'source', 'type', 'datacontenttype', 'entryid', 'data'],
    properties: {
      specversion: { const: '1.0' },
      tenant: {
        type: 'string',
        pattern: '^[a-z0-9][a-z0-9_-]{0,62}$',
        description:
          "The company the event belongs to (extension attribute): the tenant file's name, or `default` for a " +
          'single-company config. With `source` and `id`, it tells apart the events of companies that share a sink.',
      },
      id: {
        type: 'string',
        minLength: 1,
        maxLength: 64,
        pattern: '^[^.]+$',
        description: 'Stable per entry across retries, replays and restarts, unique across logs: the idempotency key.',
      },
      source: { type: 'string', format: 'uri', description: "The log's URL at the service." },
      type: {
        type: 'string',
        pattern: '^.+\\.(career|skill|identity_provider)\\..+$',
        description: '`<typePrefix>.<log>.<event>`; typePrefix defaults to com.skills.changefeed.',
      },
      subject: { type: 'string', description: 'The career or skill id; absent for the identity-provider log.' },
      time: {
        type: 'string',
        format: 'date-time',
        description: "The entry's performedAt, RFC 3339 UTC; absent when the service gave none.",
      },
      datacontenttype: { const: 'application/json' },
      dataschema: {
        type: 'string',
        format: 'uri',
        description: "URL of the data's schema, when the sink's `dataschema` setting is on.",
      },
      entryid: { type: 'string', minLength: 1, description: "The service's own entry id (data.id)." },
      sequence: {
        type: 'string',
        pattern: '^[0-9]{16}$',
        description: 'Only in pages of the pull feed: the cursor of this event (CloudEvents Sequence extension).',
      },
      data: { type: 'object' },
    },
    additionalProperties: true,
    allOf: LOG_KINDS.map((log) => ({
      if: { properties: { type: { pattern: `\\.${log}\\.[^.]+$` } } },
      then: { properties: { data: { $ref: ref(`${log}-data`) } } },
    })),
  };
}

/** Every schema of docs/events, by file name, referring to each other by file name. */
export function eventSchemaFiles(): Record<string, JsonSchema> {
  const files: Record<string, JsonSchema> = {
    [SCHEMA_FILE('cloudevent')]: cloudEventSchema(SCHEMA_FILE, { id: SCHEMA_FILE('cloudevent') }),
  };
  for (const log of LOG_KINDS) {
    const name = SCHEMA_FILE(`${log}-data`);
    files[name] = dataSchema(log, { id: name });
  }
  return files;
}
