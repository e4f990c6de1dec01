import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** A folder directly under src/, or the file itself for files at the top of src/. */
function roomOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? `${parts[0]}/` : (parts[0] ?? '');
}

/** Every relative import (static, dynamic, type-only) of every file, as room -> room edges. */
function roomImports(): Map<string, Map<string, string>> {
  const edges = new Map<string, Map<string, string>>();
  for (const file of sourceFiles(SRC)) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolve(dirname(file), fileName.replace(/\.js$/, '.ts'));
      const from = roomOf(file);
      const to = roomOf(target);
      if (from === to) continue;
      const out = edges.get(from) ?? new Map<string, string>();
      // Keep one example import per edge, so a failure names the line to change.
      if (!out.has(to)) out.set(to, `${relative(SRC, file)} imports ${relative(SRC, target)}`);
      edges.set(from, out);
    }
  }
  return edges;
}

/** The strongly connected groups of more than one room (Tarjan), each in a cycle order. */
function folderCycles(edges: Map<string, Map<string, string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const groups: string[][] = [];
  const visit = (room: string): void => {
    index.set(room, index.size);
    low.set(room, index.get(room)!);
    stack.push(room);
    for (const next of edges.get(room)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(room, Math.min(low.get(room)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(room, Math.min(low.get(room)!, index.get(next)!));
      }
    }
    if (low.get(room) !== index.get(room)) return;
    const group: string[] = [];
    for (let top = stack.pop(); top !== undefined; top = top === room ? undefined : stack.pop()) group.push(top);
    if (group.length > 1) groups.push(group.reverse());
  };
  for (const room of edges.keys()) if (!index.has(room)) visit(room);
  return groups;
}

/**
 * The store engines: the classes of src/store/ that implement the store contract (StoreBackend,
 * ChangefeedStore), as written in their declarations.
 */
function storeEngineClasses(): string[] {
  const storeFiles = sourceFiles(join(SRC, 'store'));
  return storeFiles.flatMap((file) =>
    [
      ...readFileSync(file, 'utf8').matchAll(/class (\w+)[^{]* implements [^{]*\b(?:StoreBackend|ChangefeedStore)\b/g),
    ].map((match) => match[1]!),
  );
}

describe('architecture', () => {
  it('asks the store contract what an engine can do: no instanceof on a store engine outside src/store/', () => {
    const engines = storeEngineClasses();
    expect(engines).toEqual(expect.arrayContaining(['SqliteStoreBackend', 'PostgresStoreBackend']));
    const tests = new RegExp(`\\binstanceof\\s+(?:${engines.join('|')})\\b`, 'g');
    const outside = sourceFiles(SRC)
      .filter((file) => !relative(SRC, file).startsWith(`store${sep}`))
      .flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(tests)].map((match) => `${relative(SRC, file)}: ${match[0]}`),
      );
    expect(outside).toEqual([]);
  });

  it('has no import cycle between the rooms of src/ (data flows one way)', () => {
    const edges = roomImports();
    // Each group is named by the imports between its rooms, so a failure says which line to change.
    const cycles = folderCycles(edges).map((group) =>
      group.flatMap((room) => group.map((other) => edges.get(room)?.get(other)).filter(Boolean)).join('; '),
    );
    expect(cycles).toEqual([]);
  });
});
