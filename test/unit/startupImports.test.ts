import { existsSync, readFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ConfigError, errorCodeOf } from '../../src/errors.js';
import { createLogger } from '../../src/observe/createLogger.js';
import { loadClientPackage } from '../../src/sinks/brokerConnection.js';
import { SinkUnavailableError } from '../../src/sinkContract/sinkErrors.js';

const SRC = resolve(import.meta.dirname, '../../src');

/** The packages a process loads at start, following the static value imports from `entry` (not `import type`, not `import()`). */
function packagesLoadedAtStart(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022);
    for (const statement of source.statements) {
      const specifier =
        (ts.isImportDeclaration(statement) && !statement.importClause?.isTypeOnly) ||
        (ts.isExportDeclaration(statement) && !statement.isTypeOnly)
          ? statement.moduleSpecifier
          : undefined;
      if (!specifier || !ts.isStringLiteral(specifier)) continue;
      const name = specifier.text;
      if (name.startsWith('.')) {
        const target = resolve(dirname(file), name.replace(/\.js$/, '.ts'));
        if (existsSync(target)) visit(target);
      } else if (!name.startsWith('node:'))
        packages.add(name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0]!);
    }
  };
  visit(entry);
  return packages;
}

describe('what the CLI loads at start', () => {
  it('loads no broker client, no pg and no pino-pretty until a config asks for them', () => {
    const loaded = packagesLoadedAtStart(resolve(SRC, 'cli/changefeed.ts'));
    // The sanity check: the walk does see the packages every command needs.
    expect(loaded).toContain('zod');
    const onDemand = [
      'mqtt',
      'ioredis',
      'amqplib',
      '@nats-io/transport-node',
      '@nats-io/jetstream',
      'pg',
      'pino-pretty',
    ];
    expect(onDemand.filter((name) => loaded.has(name))).toEqual([]);
  });

  it('turns a client package that cannot load into SINK_UNAVAILABLE, naming the package', async () => {
    // A specifier in a variable: tsc would refuse a literal one that resolves to nothing.
    const missing = './no-such-module.js';
    const failure = await loadClientPackage('mqtt', () => import(missing)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SinkUnavailableError);
    expect(errorCodeOf(failure)).toBe('SINK_UNAVAILABLE');
    expect((failure as Error).message).toMatch(/^cannot load the client package mqtt \(.*no-such-module/);
  });

  it('turns a pino-pretty that cannot load into CONFIG_INVALID on log.pretty, not a stack trace', () => {
    // A broken install, as node's CommonJS loader meets it: the package does not resolve. Hooked
    // at _load, which every require passes before its caches: an earlier file of this worker may
    // have loaded pino-pretty (isolate: false), and a resolution it cached skips _resolveFilename.
    const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
    const load = loader._load;
    loader._load = (request, ...rest) => {
      if (request === 'pino-pretty') throw new Error("Cannot find module 'pino-pretty'\nRequire stack:\n- here");
      return load.call(Module, request, ...rest);
    };
    let failure: unknown;
    try {
      createLogger({ pretty: true, destination: process.stderr });
    } catch (error) {
      failure = error;
    } finally {
      loader._load = load;
    }
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as ConfigError).issues).toEqual([{ path: 'log.pretty', message: 'pino-pretty cannot be loaded' }]);
    expect((failure as Error).message).toBe(
      "log.pretty needs the package pino-pretty, which cannot be loaded (Cannot find module 'pino-pretty'); " +
        'reinstall changefeed, or set log.pretty: false for JSON lines',
    );
  });
});
