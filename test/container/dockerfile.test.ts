import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  copyOperands,
  findStage,
  healthcheckCommand,
  parseDockerfile,
  type Instruction,
  type Stage,
} from './dockerfileParser.js';
import { isIgnored, parseDockerignore } from './dockerignore.js';

// No Docker engine runs where the tests do: this checks what the image will be by reading the
// Dockerfile; scripts/container/replayDockerfile.sh (replayDockerfile.test.ts) runs its steps.
const ROOT = join(import.meta.dirname, '..', '..');
const dockerfile = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const dockerignore = parseDockerignore(readFileSync(join(ROOT, '.dockerignore'), 'utf8'));
const runtime = dockerfile.stages.at(-1)!;
const build = findStage(dockerfile, 'build')!;

const NODE_20_SLIM = /^node:20(\.\d+){0,2}-bookworm-slim(@sha256:[0-9a-f]{64})?$/;
const BUILD_TOOLS = /\b(python3?|make|g\+\+|gcc|build-essential|apt-get|node-gyp)\b/;

const named = (stage: Stage, keyword: string): Instruction[] => stage.instructions.filter((i) => i.keyword === keyword);
const last = (stage: Stage, keyword: string): Instruction | undefined => named(stage, keyword).at(-1);
const runs = (stage: Stage): string[] => named(stage, 'RUN').map((i) => i.exec?.join(' ') ?? i.args);
const indexOf = (stage: Stage, keyword: string): number => stage.instructions.findIndex((i) => i.keyword === keyword);

describe('the Dockerfile', () => {
  it('builds in a named build stage and runs in a second stage on the same pinned node:20 slim image', () => {
    expect(dockerfile.stages).toHaveLength(2);
    expect(build).toBeDefined();
    expect(build.index).toBe(0);
    expect(build.base).toMatch(NODE_20_SLIM);
    expect(runtime.base).toBe(build.base);
    expect(runtime.name).not.toBe('build');
  });

  it('installs the native toolchain and points node-gyp at the image Node headers only in the build stage', () => {
    const install = runs(build).find((r) => r.includes('apt-get install'));
    expect(install).toBeDefined();
    for (const tool of ['python3', 'make', 'g++']) expect(install!.split(/\s+/)).toContain(tool);
    expect(install).toContain('--no-install-recommends');
    expect(install).toMatch(/rm -rf \/var\/lib\/apt\/lists/);
    // node-gyp reads npm_package_config_node_gyp_nodedir; the image keeps the headers in /usr/local.
    expect(build.env.npm_package_config_node_gyp_nodedir).toBe('/usr/local');
    expect(
      runtime.instructions.filter((i) => i.keyword === 'RUN' && BUILD_TOOLS.test(i.args)).map((i) => i.args),
    ).toEqual([]);
    expect(runtime.env.npm_package_config_node_gyp_nodedir).toBeUndefined();
  });

  it('runs npm ci, npm run build and npm prune --omit=dev, in that order, in the build stage', () => {
    const commands = runs(build)
      .flatMap((r) => r.split(/\s*&&\s*/))
      .map((c) => c.trim());
    const order = ['npm ci', 'npm run build', 'npm prune --omit=dev'].map((step) =>
      commands.findIndex((c) => c.startsWith(step)),
    );
    expect(
      order.every((i) => i >= 0),
      `build stage runs: ${commands.join(' | ')}`,
    ).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(build.env.NODE_ENV).toBeUndefined(); // NODE_ENV=production would make npm ci skip the compiler.
  });

  it('copies only what the build needs from the context, and .dockerignore lets all of it through', () => {
    const sources = named(build, 'COPY')
      .filter((c) => c.flags.from === undefined)
      .flatMap((c) => copyOperands(c).sources);
    expect(sources.sort()).toEqual([
      '.npmrc',
      '.prebuild-installrc',
      'bin',
      'package-lock.json',
      'package.json',
      'src',
      'tsconfig.build.json',
      'tsconfig.json',
    ]);
    for (const source of sources) expect(isIgnored(dockerignore, source), source).toBe(false);
    expect(named(build, 'ADD')).toEqual([]);
  });

  it('gives the runtime stage only production node_modules, dist, bin and package.json from the build stage', () => {
    const copies = [...named(runtime, 'COPY'), ...named(runtime, 'ADD')];
    expect(copies.every((c) => c.keyword === 'COPY' && c.flags.from === 'build')).toBe(true);
    const sources = copies.flatMap((c) => copyOperands(c).sources);
    expect(sources.sort()).toEqual(['/app/bin', '/app/dist', '/app/node_modules', '/app/package.json']);
    expect(last(build, 'WORKDIR')?.words).toEqual(['/app']);
    expect(last(runtime, 'WORKDIR')?.words).toEqual(['/app']);
    // The image's files stay root-owned, so the daemon cannot change its own code.
    expect(copies.filter((c) => c.flags.chown !== undefined)).toEqual([]);
  });

  it('sets the container environment: production, config in /config, state in /state, HTTP on 0.0.0.0:9464', () => {
    expect(runtime.env).toMatchObject({
      NODE_ENV: 'production',
      CHANGEFEED_CONFIG: '/config/changefeed.yaml',
      CHANGEFEED_STATE_DIR: '/state',
      CHANGEFEED_HTTP_HOST: '0.0.0.0',
      CHANGEFEED_HTTP_PORT: '9464',
    });
    expect(last(runtime, 'EXPOSE')?.words).toEqual(['9464']);
  });

  it('declares /state a volume owned by the node user, and creates /config', () => {
    expect(named(runtime, 'VOLUME').flatMap((v) => v.words)).toEqual(['/state']);
    const prepare = runs(runtime).find((r) => r.includes('/config'));
    expect(prepare).toMatch(/mkdir -p \/state \/config/);
    expect(prepare).toMatch(/chown node:node \/state/);
    // Docker discards changes made to a volume path after VOLUME, so the chown must come first.
    const chownAt = runtime.instructions.findIndex(
      (i) => i.keyword === 'RUN' && i.args.includes('chown node:node /state'),
    );
    expect(chownAt).toBeLessThan(indexOf(runtime, 'VOLUME'));
  });

  it('runs as the non-root node user from before the entrypoint on', () => {
    const users = named(runtime, 'USER');
    expect(users.map((u) => u.words[0])).toEqual(['node']);
    expect(indexOf(runtime, 'USER')).toBeLessThan(indexOf(runtime, 'ENTRYPOINT'));
    expect(indexOf(runtime, 'USER')).toBeGreaterThan(runtime.instructions.findLastIndex((i) => i.keyword === 'RUN'));
  });

  it('checks health with node itself against /readyz on the HTTP port', () => {
    const instruction = last(runtime, 'HEALTHCHECK')!;
    expect(instruction).toBeDefined();
    const check = healthcheckCommand(instruction);
    expect(check).not.toBe('NONE');
    const exec = check === 'NONE' ? [] : (check.exec ?? []);
    expect(exec.slice(0, 2)).toEqual(['node', '-e']);
    expect(exec[2]).toContain('http://127.0.0.1:');
    expect(exec[2]).toContain('/readyz');
    expect(exec[2]).toMatch(/CHANGEFEED_HTTP_PORT \|\| 9464/);
    expect(instruction.flags).toMatchObject({
      interval: expect.stringMatching(/^\d+s$/),
      timeout: expect.stringMatching(/^\d+s$/),
    });
  });

  it('starts the CLI as PID 1 with `run`, stopped by SIGTERM', () => {
    expect(last(runtime, 'ENTRYPOINT')?.exec).toEqual(['node', '/app/bin/changefeed.js']);
    expect(last(runtime, 'CMD')?.exec).toEqual(['run']);
    expect(last(runtime, 'STOPSIGNAL')?.words).toEqual(['SIGTERM']);
  });
});

describe('the .dockerignore', () => {
  it('keeps dependencies, build output, state, git and logs out of the build context', () => {
    for (const path of [
      'node_modules',
      'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
      'dist/cli/changefeed.js',
      'state/changefeed.sqlite',
      '.git/HEAD',
      'coverage/index.html',
      'npm-debug.log',
      'src/nested/trace.log',
      'config/changefeed.yaml',
    ]) {
      expect(isIgnored(dockerignore, path), path).toBe(true);
    }
  });
});

describe('the Dockerfile parser', () => {
  it('joins continued lines, skips comments between them and reads flags, exec form, ENV and ARG substitution', () => {
    const parsed = parseDockerfile(
      [
        '# escape=\\',
        'ARG BASE=node:20-bookworm-slim',
        'FROM ${BASE} AS Build',
        'ENV A=1 B="two words" \\',
        '    # a comment inside the instruction',
        '    D=${A}',
        'ENV C=${A}x',
        'ENV LEGACY value with spaces',
        'WORKDIR /app',
        'WORKDIR sub',
        'COPY --chown=node:node a "b c" ./',
        'FROM ${BASE:-other}',
        'HEALTHCHECK --interval=5s CMD ["node", "-e", "1"]',
        'CMD ["run"]',
      ].join('\n'),
    );
    const [first, second] = parsed.stages;
    expect(parsed.globalArgs).toEqual({ BASE: 'node:20-bookworm-slim' });
    expect(first).toMatchObject({ name: 'build', base: 'node:20-bookworm-slim', workdir: '/app/sub' });
    // As in Docker, one ENV substitutes the values from before it: D does not see A.
    expect(first!.env).toEqual({ A: '1', B: 'two words', D: '', C: '1x', LEGACY: 'value with spaces' });
    const copy = first!.instructions.find((i) => i.keyword === 'COPY')!;
    expect(copy.flags).toEqual({ chown: 'node:node' });
    expect(copyOperands(copy)).toEqual({ sources: ['a', 'b c'], dest: './', from: undefined });
    expect(copy.workdir).toBe('/app/sub');
    expect(second!.base).toBe('node:20-bookworm-slim');
    expect(healthcheckCommand(second!.instructions[0]!)).toEqual({ exec: ['node', '-e', '1'], shell: undefined });
    expect(second!.instructions[1]!.exec).toEqual(['run']);
  });

  it('refuses what it cannot read rather than misreading it', () => {
    expect(() => parseDockerfile('RUN echo hi')).toThrow(/before the first FROM/);
    expect(() => parseDockerfile('FROM node:20\nRUN <<EOF\necho hi\nEOF')).toThrow(/heredocs are not supported/);
    expect(() => parseDockerfile('FROM node:20 AS')).toThrow(/FROM takes/);
  });
});

describe('the .dockerignore matcher', () => {
  it(
    'follows Docker: anchored patterns, * within a segment, ** across, directories cover their ' +
      'contents, ! re-includes',
    () => {
      const rules = parseDockerignore(
        ['# comment', '/dist', '*.md', '**/*.tmp', 'docs', '!docs/keep.txt', 'src/*/generated'].join('\n'),
      );
      expect(isIgnored(rules, 'dist/a/b.js')).toBe(true);
      expect(isIgnored(rules, 'README.md')).toBe(true);
      expect(isIgnored(rules, 'sub/README.md')).toBe(false);
      expect(isIgnored(rules, 'a/b/c.tmp')).toBe(true);
      expect(isIgnored(rules, 'docs/x.md')).toBe(true);
      expect(isIgnored(rules, 'docs/keep.txt')).toBe(false);
      expect(isIgnored(rules, 'src/api/generated/x.ts')).toBe(true);
      expect(isIgnored(rules, 'src/generated/x.ts')).toBe(false);
      expect(isIgnored(rules, './src/index.ts')).toBe(false);
    },
  );
});
