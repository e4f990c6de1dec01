import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { toConfigJsonSchema } from '../../src/config/configJsonSchema.js';
import { tenantConfigSchema } from '../../src/config/tenantConfigSchema.js';

describe('toConfigJsonSchema', () => {
  it('converts each schema once and hands every caller the same result', () => {
    const first = toConfigJsonSchema(tenantConfigSchema);
    expect(first).toBeDefined();
    expect(toConfigJsonSchema(tenantConfigSchema)).toBe(first);
  });

  it('keeps schemas apart', () => {
    const a = toConfigJsonSchema(z.object({ a: z.string() }));
    const b = toConfigJsonSchema(z.object({ b: z.number() }));
    expect(Object.keys((a as { properties: object }).properties)).toEqual(['a']);
    expect(Object.keys((b as { properties: object }).properties)).toEqual(['b']);
  });
});
