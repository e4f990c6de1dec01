import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { interpolateEnv } from '../../src/config/interpolateEnv.js';

const interpolate = (value: unknown, env: NodeJS.ProcessEnv = {}): unknown => interpolateEnv(value, env, 'test config');

describe('interpolateEnv', () => {
  it('replaces references in string values at any depth, leaving keys and other types alone', () => {
    const input = { '${KEY}': '${A}', list: ['x-${B}', 3, true, null], nested: { deep: '${A}${B}' } };
    expect(interpolate(input, { A: 'a', B: 'b', KEY: 'k' })).toEqual({
      '${KEY}': 'a',
      list: ['x-b', 3, true, null],
      nested: { deep: 'ab' },
    });
  });

  it('keeps unset references as written under the sections a command does not read, and only there', () => {
    const input = { sinks: [{ url: '${HOOK_URL}' }], stateDir: '${STATE}' };
    expect(() => interpolateEnv(input, {}, 'test config', { keepUnsetUnder: ['sinks'] })).toThrow(
      /stateDir: environment variable STATE is not set/,
    );
    expect(interpolateEnv({ ...input, stateDir: 'state' }, {}, 'test config', { keepUnsetUnder: ['sinks'] })).toEqual({
      sinks: [{ url: '${HOOK_URL}' }],
      stateDir: 'state',
    });
    // A malformed reference is still an error there: it is a typo, not a secret kept elsewhere.
    expect(() => interpolateEnv({ sinks: ['${HOOK URL}'] }, {}, 'test config', { keepUnsetUnder: ['sinks'] })).toThrow(
      ConfigError,
    );
  });

  it('uses the default when the variable is unset or empty, as a shell does', () => {
    expect(interpolate('${A:-fallback}', {})).toBe('fallback');
    expect(interpolate('${A:-fallback}', { A: '' })).toBe('fallback');
    expect(interpolate('${A:-fallback}', { A: 'set' })).toBe('set');
    expect(interpolate('${A:-}', {})).toBe('');
    expect(interpolate('${A:-http://x:80/a}', {})).toBe('http://x:80/a');
  });

  it('substitutes an empty variable without default as the empty string', () => {
    expect(interpolate('[${A}]', { A: '' })).toBe('[]');
  });

  it('turns $${ into a literal ${ without expanding what follows', () => {
    expect(interpolate('$${A} and ${A}', { A: 'x' })).toBe('${A} and x');
    expect(interpolate('price: $5, $${', {})).toBe('price: $5, ${');
  });

  it('does not expand values of variables a second time', () => {
    expect(interpolate('${A}', { A: '${B}', B: 'no' })).toBe('${B}');
  });

  it('reports every unset variable with its config path in one error', () => {
    let error: unknown;
    try {
      interpolate({ api: { apiKey: '${API_KEY}' }, sinks: [{ url: 'https://${HOST}/in' }] });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { issues, message } = error as ConfigError;
    expect(issues.map((i) => i.path)).toEqual(['api.apiKey', 'sinks[0].url']);
    expect(message).toContain('api.apiKey: environment variable API_KEY is not set');
    expect(message).toContain('sinks[0].url: environment variable HOST is not set');
  });

  it('rejects malformed references instead of passing them through', () => {
    expect(() => interpolate({ a: '${API KEY}' })).toThrow(/a: "\$\{API KEY\}" is not a variable reference/);
    expect(() => interpolate({ a: 'x ${' })).toThrow(/unterminated/);
  });
});
