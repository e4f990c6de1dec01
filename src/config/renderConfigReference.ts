import type { z } from 'zod';
import { isPlainObject } from './configPath.js';
import { toConfigJsonSchema, type JsonSchema } from './configJsonSchema.js';
import {
  describeDefault,
  describeSchemaType,
  findDiscriminator,
  isObjectSchema,
  tagValue,
} from './describeSchemaType.js';

export interface ConfigReferenceOptions {
  /** The page's `#` heading. */
  title: string;
  /** Markdown placed under the title, e.g. how layering works. */
  intro?: string;
  /** Environment variable name -> dotted config path, listed in their own table. */
  envMapping?: Record<string, string>;
}

interface Section {
  readonly heading: string;
  /** The union variant this level sits in, to tell apart same-path levels that differ. */
  readonly variant: string | undefined;
  readonly description: string | undefined;
  readonly rows: string[][];
}

/**
 * Renders the Markdown configuration reference from the schema, via zod's JSON Schema (so it
 * sees exactly what validation sees, defaults included). One table per object level; a
 * `type`-tagged union gets one section per variant, headed by its tag.
 */
export function renderConfigReference(schema: z.ZodType, options: ConfigReferenceOptions): string {
  const root = toConfigJsonSchema(schema);
  if (!root) throw new Error('the config schema cannot be expressed as JSON Schema, so no reference can be generated');

  const sections: Section[] = [];
  const visitObject = (path: string, object: JsonSchema, heading: string, variant: string | undefined): void => {
    const section: Section = { heading, variant, description: object.description, rows: [] };
    sections.push(section);
    const required = new Set(object.required ?? []);
    const nested: (() => void)[] = [];
    for (const [key, property] of Object.entries(object.properties ?? {})) {
      if (!isPlainObject(property)) continue;
      const name = path === '' ? key : `${path}.${key}`;
      section.rows.push([
        code(name),
        escapeCell(describeSchemaType(property)),
        defaultCell(property, required.has(key)),
        escapeCell([property.description, variantsNote(property)].filter(Boolean).join(' ')),
      ]);
      nested.push(() => visitNested(name, property, variant));
    }
    for (const visit of nested) visit();
  };

  // Finds the object levels below a property: plain objects, list items, map values, the
  // non-null side of a nullable, and each variant of a union.
  const visitNested = (path: string, schema: JsonSchema, variant: string | undefined): void => {
    const branches = schema.anyOf ?? schema.oneOf ?? [];
    const objects = branches.filter(isObjectSchema);
    if (objects.length > 1) {
      const tag = findDiscriminator(objects);
      objects.forEach((object, index) => {
        const label = tag ? `${tag}: ${JSON.stringify(tagValue(object, tag))}` : `variant ${index + 1}`;
        visitObject(path, object, `${code(path)} with ${code(label)}`, label);
      });
      return;
    }
    for (const branch of branches) visitNested(path, branch, variant);
    if (isObjectSchema(schema)) visitObject(path, schema, code(path), variant);
    else if (schema.type === 'array' && isPlainObject(schema.items)) visitNested(`${path}[]`, schema.items, variant);
    else if (schema.type === 'object' && isPlainObject(schema.additionalProperties)) {
      visitNested(`${path}.<name>`, schema.additionalProperties, variant);
    }
  };

  if (isObjectSchema(root)) visitObject('', root, 'Top level', undefined);
  else visitNested('', root, undefined);

  const out: string[] = [`# ${options.title}`, ''];
  out.push('<!-- Generated from the zod schema by scripts/generateConfigReference.ts; do not edit by hand. -->', '');
  if (options.intro) out.push(options.intro.trim(), '');
  if (root.description && !isObjectSchema(root)) out.push(root.description, '');
  const env = Object.entries(options.envMapping ?? {});
  if (env.length > 0) {
    out.push('## Environment variables', '', '| Variable | Sets |', '|---|---|');
    for (const [name, path] of env) out.push(`| ${code(name)} | ${code(path)} |`);
    out.push('');
  }
  for (const section of distinctSections(sections)) {
    out.push(`## ${section.heading}`, '');
    if (section.description) out.push(section.description, '');
    if (section.rows.length === 0) {
      out.push('No settings.', '');
      continue;
    }
    out.push('| Path | Type | Default | Description |', '|---|---|---|---|');
    for (const row of section.rows) out.push(`| ${row.join(' | ')} |`);
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/**
 * Levels shared by every variant of a union (e.g. each sink's `delivery`) are listed once;
 * same-path levels that differ get their variant in the heading so anchors stay unique.
 */
function distinctSections(sections: readonly Section[]): Section[] {
  const body = (s: Section): string => JSON.stringify([s.description, s.rows]);
  const kept: Section[] = [];
  for (const section of sections) {
    const samePath = sections.filter((other) => other.heading === section.heading);
    if (samePath.length === 1) kept.push(section);
    else if (samePath.every((other) => body(other) === body(section))) {
      if (samePath[0] === section) kept.push(section);
    } else {
      kept.push({ ...section, heading: `${section.heading} (with ${code(section.variant ?? 'variant')})` });
    }
  }
  return kept;
}

// Object defaults are spelled out field by field in the level's own table; repeating them as
// one long JSON blob would only be truncated noise.
function defaultCell(property: JsonSchema, required: boolean): string {
  if (property.default === undefined) return required ? '*required*' : '—';
  if (isPlainObject(property.default) && isObjectSchema(property)) return '*see fields*';
  return escapeCell(code(describeDefault(property.default)));
}

/** For a union of objects (or a list of them): which tag picks the variant, and its values. */
function variantsNote(property: JsonSchema): string | undefined {
  const schema = property.type === 'array' && isPlainObject(property.items) ? property.items : property;
  const variants = (schema.anyOf ?? schema.oneOf ?? []).filter(isObjectSchema);
  if (variants.length < 2) return undefined;
  const tag = findDiscriminator(variants);
  if (!tag) return 'One of the variants below.';
  return `Variants by ${code(tag)}: ${variants.map((v) => code(String(tagValue(v, tag)))).join(', ')}.`;
}

function code(text: string): string {
  return `\`${text.replace(/`/g, "'")}\``;
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>');
}
