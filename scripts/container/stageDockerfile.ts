/**
 * The file-copying half of replaying the Dockerfile without Docker (replayDockerfile.sh runs the
 * commands). It reads the Dockerfile, so the replay copies what the image would hold, not a list
 * kept by hand: the WORKDIR of the build stage maps to BUILD_DIR and the one of the runtime stage
 * to APP_DIR. Lists are printed NUL-separated, for `mapfile -d ''`.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, posix, relative, sep } from 'node:path';
import {
  copyOperands,
  findStage,
  healthcheckCommand,
  parseDockerfile,
  type Instruction,
  type Stage,
} from '../../test/container/dockerfileParser.js';
import { hasExceptions, isIgnored, parseDockerignore, type IgnoreRule } from '../../test/container/dockerignore.js';

const USAGE = `usage: tsx scripts/container/stageDockerfile.ts STEP CONTEXT_DIR [DIR...]
  context     CONTEXT_DIR BUILD_DIR           copy what the build stage COPYs from the context (honouring .dockerignore)
  runtime     CONTEXT_DIR BUILD_DIR APP_DIR   copy what the runtime stage COPYs from the build stage
  command     CONTEXT_DIR APP_DIR             print ENTRYPOINT and CMD, the runtime WORKDIR mapped to APP_DIR
  healthcheck CONTEXT_DIR                     print the HEALTHCHECK command
  env         CONTEXT_DIR                     print the runtime stage's ENV as NAME=value`;

class ReplayError extends Error {}

function main(argv: string[]): number {
  const [step, contextDir, ...dirs] = argv;
  if (step === undefined || contextDir === undefined) return usage();
  const dockerfile = parseDockerfile(readFileSync(join(contextDir, 'Dockerfile'), 'utf8'));
  const runtime = dockerfile.stages.at(-1)!;
  const build = buildStageOf(runtime, (ref) => findStage(dockerfile, ref));
  if (step === 'context' && dirs.length === 1) stageContext(contextDir, build, dirs[0]!);
  else if (step === 'runtime' && dirs.length === 2) stageRuntime(build, dirs[0]!, runtime, dirs[1]!);
  else if (step === 'command' && dirs.length === 1) printList(command(runtime, dirs[0]!));
  else if (step === 'healthcheck' && dirs.length === 0) printList(healthcheck(runtime));
  else if (step === 'env' && dirs.length === 0) printList(Object.entries(runtime.env).map(([k, v]) => `${k}=${v}`));
  else return usage();
  return 0;
}

function usage(): number {
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

/** The one stage the runtime stage copies from. */
function buildStageOf(runtime: Stage, find: (ref: string) => Stage | undefined): Stage {
  const refs = new Set(runtime.instructions.flatMap((i) => (i.flags.from === undefined ? [] : [i.flags.from])));
  const [ref, ...others] = refs;
  if (ref === undefined || others.length > 0) {
    throw new ReplayError(
      `the runtime stage must COPY --from exactly one build stage; it copies from ${[...refs].join(', ') || 'none'}`,
    );
  }
  const stage = find(ref);
  if (!stage) throw new ReplayError(`COPY --from=${ref} names no stage of the Dockerfile`);
  return stage;
}

function stageContext(contextDir: string, build: Stage, buildDir: string): void {
  const ignoreFile = join(contextDir, '.dockerignore');
  const rules = existsSync(ignoreFile) ? parseDockerignore(readFileSync(ignoreFile, 'utf8')) : [];
  const filter = (src: string): boolean => {
    const rel = relative(contextDir, src).split(sep).join('/');
    if (rel === '' || !isIgnored(rules, rel)) return true;
    // An ignored directory is still walked when a `!` rule may re-include something below it.
    return hasExceptions(rules) && statSync(src).isDirectory();
  };
  for (const instruction of build.instructions) {
    if (instruction.keyword === 'ADD') throw new ReplayError(`line ${instruction.line}: ADD is not replayed; use COPY`);
    if (instruction.keyword !== 'COPY' || instruction.flags.from !== undefined) continue;
    const { sources, dest } = copyOperands(instruction);
    const found = sources.flatMap((source) => contextSources(contextDir, source, rules, instruction));
    const target = hostPath(posix.resolve(instruction.workdir, dest), build, buildDir);
    copyLikeDocker(found, target, dest.endsWith('/') || sources.length > 1 || found.length > 1, filter);
  }
}

function stageRuntime(build: Stage, buildDir: string, runtime: Stage, appDir: string): void {
  mkdirSync(appDir, { recursive: true });
  for (const instruction of runtime.instructions) {
    if (instruction.keyword !== 'COPY' && instruction.keyword !== 'ADD') continue;
    if (instruction.flags.from === undefined) {
      throw new ReplayError(
        `line ${instruction.line}: the runtime stage copies from the build context; the replay expects only COPY --from=${build.name ?? build.index}`,
      );
    }
    const { sources, dest } = copyOperands(instruction);
    const found = sources.map((source) => {
      const path = hostPath(posix.resolve('/', source), build, buildDir);
      if (!existsSync(path))
        throw new ReplayError(`line ${instruction.line}: ${source} is not in the build stage (looked for ${path})`);
      return path;
    });
    const target = hostPath(posix.resolve(instruction.workdir, dest), runtime, appDir);
    copyLikeDocker(found, target, dest.endsWith('/') || sources.length > 1);
  }
}

function command(runtime: Stage, appDir: string): string[] {
  const last = (keyword: string): Instruction | undefined =>
    runtime.instructions.filter((i) => i.keyword === keyword).at(-1);
  const entrypoint = last('ENTRYPOINT');
  const cmd = last('CMD');
  for (const instruction of [entrypoint, cmd]) {
    if (instruction && !instruction.exec)
      throw new ReplayError(
        `line ${instruction.line}: ${instruction.keyword} must use the exec form (["node", ...]) to be replayed`,
      );
  }
  const words = [...(entrypoint?.exec ?? []), ...(cmd?.exec ?? [])];
  const root = `${runtime.workdir.replace(/\/$/, '')}/`;
  return words.map((w) => (w.startsWith(root) ? join(appDir, w.slice(root.length)) : w));
}

function healthcheck(runtime: Stage): string[] {
  const instruction = runtime.instructions.filter((i) => i.keyword === 'HEALTHCHECK').at(-1);
  if (!instruction) throw new ReplayError('the runtime stage has no HEALTHCHECK');
  const check = healthcheckCommand(instruction);
  if (check === 'NONE' || !check.exec)
    throw new ReplayError(`line ${instruction.line}: HEALTHCHECK must be CMD in exec form to be replayed`);
  return check.exec;
}

/** A path of the stage's filesystem on this machine: its final WORKDIR is `hostRoot`. */
function hostPath(containerPath: string, stage: Stage, hostRoot: string): string {
  const rel = posix.relative(stage.workdir, containerPath);
  if (rel.startsWith('..') || posix.isAbsolute(rel)) {
    throw new ReplayError(
      `${containerPath} is outside WORKDIR ${stage.workdir}: the replay maps only the WORKDIR of each stage`,
    );
  }
  return join(hostRoot, rel);
}

/** The context files a COPY source names (a `*` or `?` is allowed in its last segment). */
function contextSources(
  contextDir: string,
  source: string,
  rules: readonly IgnoreRule[],
  instruction: Instruction,
): string[] {
  const rel = posix.normalize(source.replace(/^\/+/, ''));
  const dir = posix.dirname(rel);
  const name = posix.basename(rel);
  let names = [rel];
  if (/[*?[]/.test(name)) {
    const pattern = new RegExp(
      `^${name
        .replace(/[.+^${}()|\\]/g, '\\$&')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]')}$`,
    );
    const listed = existsSync(join(contextDir, dir)) ? readdirSync(join(contextDir, dir)) : [];
    names = listed.filter((n) => pattern.test(n)).map((n) => posix.join(dir, n));
  }
  const visible = names.filter((n) => existsSync(join(contextDir, n)) && (rel === '.' || !isIgnored(rules, n)));
  if (visible.length === 0) {
    throw new ReplayError(
      `line ${instruction.line}: COPY ${source}: not found in the build context (missing, or excluded by .dockerignore)`,
    );
  }
  return visible.map((n) => join(contextDir, n));
}

/** COPY semantics: a directory's contents go into the target; a file becomes the target, or goes into it. */
function copyLikeDocker(
  sources: readonly string[],
  target: string,
  intoDirectory: boolean,
  filter?: (src: string) => boolean,
): void {
  for (const source of sources) {
    if (statSync(source).isDirectory()) {
      mkdirSync(target, { recursive: true });
      cpSync(source, target, { recursive: true, verbatimSymlinks: true, ...(filter ? { filter } : {}) });
    } else {
      const to = intoDirectory ? join(target, basename(source)) : target;
      mkdirSync(dirname(to), { recursive: true });
      cpSync(source, to, { verbatimSymlinks: true });
    }
  }
}

function printList(items: readonly string[]): void {
  process.stdout.write(items.map((i) => `${i}\0`).join(''));
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`stageDockerfile: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
