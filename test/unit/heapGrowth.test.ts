import { describe, expect, it } from 'vitest';
import { limitHeapGrowth } from '../../src/cli/heapGrowth.js';
import { runBundledScript } from '../support/bundledScript.js';

describe('limitHeapGrowth', () => {
  it('leaves a --heap-growing-percent given to node alone', () => {
    expect(limitHeapGrowth(['--heap-growing-percent=50'])).toBe(false);
    expect(limitHeapGrowth(['--heap_growing_percent=50'])).toBe(false);
  });

  // V8 prints `unrecognized flag` to stderr for a flag it no longer has (a Node upgrade).
  it('sets a flag this V8 knows, in a process that did not get one', async () => {
    const script = [
      "import { limitHeapGrowth } from './src/cli/heapGrowth.ts';",
      'console.log(limitHeapGrowth());',
    ].join('\n');
    const run = await runBundledScript(script);
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('true');
  });
});
