import { describe, expect, it } from 'vitest';
import { BASELINE_VERSION, missingTables, schemaStep, type SchemaStep } from '../../src/store/schemaVersion.js';

describe('schemaStep: from the version a store records to this build', () => {
  it.each<[string, number, number, SchemaStep]>([
    ['a new store gets the baseline and every migration', 0, 2, { action: 'create' }],
    ['a new store of a build without migrations gets the baseline', 0, 0, { action: 'create' }],
    ['the 1.0.0 schema is current while no migration follows it', BASELINE_VERSION, 0, { action: 'current' }],
    ['the 1.0.0 schema takes every migration', BASELINE_VERSION, 2, { action: 'migrate', index: 0 }],
    ['a store one migration behind takes the last', BASELINE_VERSION + 1, 2, { action: 'migrate', index: 1 }],
    ['a store at the last migration is current', BASELINE_VERSION + 2, 2, { action: 'current' }],
    ['a store of a newer build is newer', BASELINE_VERSION + 3, 2, { action: 'newer' }],
    ['a newer store is newer for a build without migrations', BASELINE_VERSION + 1, 0, { action: 'newer' }],
    ['the first development schema is refused', 1, 0, { action: 'prerelease' }],
    [
      'the last development schema is refused, never taken for 1.0.0',
      BASELINE_VERSION - 1,
      2,
      { action: 'prerelease' },
    ],
    ['a negative version is none any build wrote', -1, 0, { action: 'unknown' }],
    ['the lowest user_version SQLite holds is none any build wrote', -(2 ** 31), 2, { action: 'unknown' }],
    ['a fraction is none any build wrote', BASELINE_VERSION + 0.5, 2, { action: 'unknown' }],
    ['NaN is none any build wrote', Number.NaN, 0, { action: 'unknown' }],
  ])('%s (found %s, %i migrations)', (_, found, migrations, step) => {
    expect(schemaStep(found, migrations)).toEqual(step);
  });
});

describe('missingTables: what a store that records a version lacks of its tables', () => {
  it.each<[string, string[], string[], string[]]>([
    ['a whole store lacks nothing', ['a', 'b'], ['b', 'a'], []],
    ["tables of others beside ours don't count", ['a', 'b'], ['a', 'b', 'x'], []],
    ['a store with no tables lacks every one, in schema order', ['a', 'b', 'c'], [], ['a', 'b', 'c']],
    ['one dropped table is named', ['a', 'b', 'c'], ['c', 'a'], ['b']],
    ['names are matched exactly', ['events'], ['Events', 'events_old'], ['events']],
  ])('%s', (_, expected, present, missing) => {
    expect(missingTables(expected, present)).toEqual(missing);
  });
});
