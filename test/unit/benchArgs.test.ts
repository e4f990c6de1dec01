import { describe, expect, it } from 'vitest';
import { parseBenchArgs, type BenchRequest } from '../../bench/benchArgs.js';

const KNOWN = ['pipeline', 'webhook', 'queues', 'scheduling', 'large-company'];

describe('npm run bench -- <args>', () => {
  const cases: Array<[string, string[], BenchRequest]> = [
    ['no argument runs every section in order', [], { sections: KNOWN }],
    ['one section alone', ['scheduling'], { sections: ['scheduling'] }],
    ['several, in the order given, each once', ['queues', 'pipeline', 'queues'], { sections: ['queues', 'pipeline'] }],
    ['--list lists', ['--list'], { list: true }],
    ['--help lists too, whatever else is given', ['pipeline', '--help'], { list: true }],
    [
      'a typo names the section meant',
      ['pipline'],
      { error: 'unknown bench section "pipline"; did you mean "pipeline"? (npm run bench -- --list shows them)' },
    ],
    [
      'a transposition is one edit',
      ['qeueus'],
      { error: 'unknown bench section "qeueus"; did you mean "queues"? (npm run bench -- --list shows them)' },
    ],
    [
      'nothing close: no guess',
      ['everything'],
      { error: 'unknown bench section "everything" (npm run bench -- --list shows them)' },
    ],
    ['an unknown flag', ['--fast'], { error: 'unknown option "--fast"; the only option is --list' }],
  ];
  it.each(cases)('%s', (_name, args, expected) => {
    expect(parseBenchArgs(args, KNOWN)).toEqual(expected);
  });
});
