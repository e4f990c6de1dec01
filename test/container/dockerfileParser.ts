/**
 * A minimal Dockerfile reader, enough to check our own Dockerfile and to replay it without Docker
 * (scripts/container/stageDockerfile.ts). It follows the Dockerfile reference for: the `escape`
 * parser directive, comments (also between continued lines), line continuations, `--flag=value`
 * flags, the JSON exec form, stages (`FROM image AS name`), and ARG/ENV substitution (`$VAR`,
 * `${VAR}`, `${VAR:-default}`, `${VAR:+alternative}`) in the instructions Docker substitutes in.
 * It does not interpret heredocs or ONBUILD triggers: a heredoc is reported as an error rather
 * than misread.
 */

export interface Instruction {
  /** Upper-case keyword: FROM, RUN, COPY... */
  readonly keyword: string;
  /** `--name=value` flags before the arguments; a bare `--name` has the value ''. */
  readonly flags: Readonly<Record<string, string>>;
  /** The arguments as written (continued lines joined, flags removed). */
  readonly args: string;
  /** The arguments in JSON exec form (`["node", "x.js"]`), if they are written so. */
  readonly exec: readonly string[] | undefined;
  /**
   * The arguments as Docker reads them: the exec form, else shell-like words with quotes
   * removed and, for the instructions Docker substitutes in, ARG and ENV values substituted.
   */
  readonly words: readonly string[];
  /** The working directory in effect for this instruction ('/' before any WORKDIR). */
  readonly workdir: string;
  /** 1-based line the instruction starts on. */
  readonly line: number;
}

export interface Stage {
  readonly index: number;
  readonly name: string | undefined;
  /** The base image, global ARGs substituted. */
  readonly base: string;
  readonly from: Instruction;
  /** The instructions after FROM, up to the next FROM. */
  readonly instructions: readonly Instruction[];
  /** ENV values in effect at the end of the stage. */
  readonly env: Readonly<Record<string, string>>;
  /** The working directory at the end of the stage. */
  readonly workdir: string;
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  readonly globalArgs: Readonly<Record<string, string | undefined>>;
  readonly stages: readonly Stage[];
}

export class DockerfileSyntaxError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(`Dockerfile line ${line}: ${message}`);
    this.name = 'DockerfileSyntaxError';
  }
}

const FLAG_KEYWORDS = new Set(['FROM', 'RUN', 'COPY', 'ADD', 'HEALTHCHECK']);
/** Instructions whose arguments Docker substitutes variables in. */
const SUBSTITUTING = new Set([
  'ADD',
  'COPY',
  'ENV',
  'EXPOSE',
  'FROM',
  'LABEL',
  'STOPSIGNAL',
  'USER',
  'VOLUME',
  'WORKDIR',
  'ARG',
]);

interface RawInstruction {
  keyword: string;
  flags: Record<string, string>;
  args: string;
  exec: string[] | undefined;
  line: number;
}

export function parseDockerfile(text: string): Dockerfile {
  const { lines, escape } = logicalLines(text);
  const globalArgs: Record<string, string | undefined> = {};
  const stages: Stage[] = [];
  let current:
    | {
        from: Instruction;
        name: string | undefined;
        base: string;
        instructions: Instruction[];
        env: Record<string, string>;
        args: Record<string, string | undefined>;
      }
    | undefined;
  let workdir = '/';

  const finish = (): void => {
    if (!current) return;
    stages.push({
      index: stages.length,
      name: current.name,
      base: current.base,
      from: current.from,
      instructions: current.instructions,
      env: current.env,
      workdir,
    });
  };

  for (const raw of lines.map((l) => readInstruction(l.text, l.line))) {
    if (raw.keyword === 'FROM') {
      finish();
      workdir = '/';
      const from = complete(raw, globalArgs, escape, workdir);
      const [base, as, name, ...extra] = from.words;
      if (
        base === undefined ||
        (as !== undefined && (as.toUpperCase() !== 'AS' || name === undefined)) ||
        extra.length > 0
      ) {
        throw new DockerfileSyntaxError(raw.line, `FROM takes "image [AS name]", got "${raw.args}"`);
      }
      current = { from, name: name?.toLowerCase(), base, instructions: [], env: {}, args: {} };
      continue;
    }
    if (!current) {
      if (raw.keyword !== 'ARG')
        throw new DockerfileSyntaxError(raw.line, `${raw.keyword} before the first FROM (only ARG may come before it)`);
      for (const [k, v] of argDeclarations(complete(raw, globalArgs, escape, workdir))) globalArgs[k] = v;
      continue;
    }
    const scope = { ...current.args, ...current.env };
    const instruction = complete(raw, scope, escape, workdir);
    if (raw.keyword === 'ARG') {
      for (const [k, v] of argDeclarations(instruction)) current.args[k] = v ?? globalArgs[k];
    } else if (raw.keyword === 'ENV') {
      for (const [k, v] of envAssignments(instruction)) current.env[k] = v;
    } else if (raw.keyword === 'WORKDIR') {
      const dir = instruction.words[0] ?? '/';
      workdir = dir.startsWith('/') ? dir : `${workdir.replace(/\/$/, '')}/${dir}`;
    }
    current.instructions.push(instruction);
  }
  finish();
  if (stages.length === 0) throw new DockerfileSyntaxError(1, 'no FROM instruction');
  return { globalArgs, stages };
}

/** The stage with this name (case-insensitive) or index, as `COPY --from` names it. */
export function findStage(dockerfile: Dockerfile, ref: string): Stage | undefined {
  if (/^\d+$/.test(ref)) return dockerfile.stages[Number(ref)];
  return dockerfile.stages.find((s) => s.name === ref.toLowerCase());
}

/** A COPY or ADD split into its sources and destination (relative paths stay relative). */
export function copyOperands(instruction: Instruction): { sources: string[]; dest: string; from: string | undefined } {
  const words = [...instruction.words];
  const dest = words.pop();
  if (dest === undefined || words.length === 0)
    throw new DockerfileSyntaxError(instruction.line, `${instruction.keyword} needs a source and a destination`);
  return { sources: words, dest, from: instruction.flags.from };
}

/** HEALTHCHECK: its flags and command (exec form, or shell form as one string), or 'NONE'. */
export function healthcheckCommand(
  instruction: Instruction,
): { exec: string[] | undefined; shell: string | undefined } | 'NONE' {
  const match = /^(CMD|NONE)\b\s*(.*)$/is.exec(instruction.args.trim());
  if (!match) throw new DockerfileSyntaxError(instruction.line, 'HEALTHCHECK takes CMD ... or NONE');
  if (match[1]!.toUpperCase() === 'NONE') return 'NONE';
  const rest = match[2]!.trim();
  const exec = execForm(rest);
  return exec ? { exec, shell: undefined } : { exec: undefined, shell: rest };
}

function logicalLines(text: string): { lines: { text: string; line: number }[]; escape: string } {
  const physical = text.split(/\r?\n/);
  let escape = '\\';
  let n = 0;
  for (; n < physical.length; n++) {
    const directive = /^#\s*([a-z][a-z0-9]*)\s*=\s*(\S+)\s*$/i.exec(physical[n]!);
    if (!directive) break;
    if (directive[1]!.toLowerCase() === 'escape') {
      if (directive[2] !== '\\' && directive[2] !== '`')
        throw new DockerfileSyntaxError(n + 1, `invalid escape character "${directive[2]}"`);
      escape = directive[2];
    }
  }
  const continuation = new RegExp(`${escape === '\\' ? '\\\\' : '`'}[ \\t]*$`);
  const lines: { text: string; line: number }[] = [];
  let pending: { text: string; line: number } | undefined;
  for (let i = n; i < physical.length; i++) {
    const text = physical[i]!;
    const trimmed = text.trim();
    // Comments and blank lines are dropped, also between the lines of one instruction.
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const continues = continuation.test(text);
    const part = continues ? text.replace(continuation, '') : text;
    pending = pending ? { text: pending.text + part, line: pending.line } : { text: part, line: i + 1 };
    if (!continues) {
      lines.push(pending);
      pending = undefined;
    }
  }
  if (pending) lines.push(pending);
  return { lines, escape };
}

function readInstruction(text: string, line: number): RawInstruction {
  const match = /^\s*([A-Za-z]+)(?:\s+([\s\S]*))?$/.exec(text);
  if (!match) throw new DockerfileSyntaxError(line, `not an instruction: "${text.trim()}"`);
  const keyword = match[1]!.toUpperCase();
  let rest = (match[2] ?? '').trim();
  const flags: Record<string, string> = {};
  if (FLAG_KEYWORDS.has(keyword)) {
    for (
      let flag = /^--([A-Za-z][\w-]*)(?:=(\S*))?(?:\s+|$)/.exec(rest);
      flag;
      flag = /^--([A-Za-z][\w-]*)(?:=(\S*))?(?:\s+|$)/.exec(rest)
    ) {
      flags[flag[1]!] = flag[2] ?? '';
      rest = rest.slice(flag[0].length);
    }
  }
  if (
    (keyword === 'RUN' || keyword === 'COPY' || keyword === 'ADD') &&
    /<<-?\s*["']?[A-Za-z_]\w*["']?/.test(rest) &&
    !rest.startsWith('[')
  ) {
    throw new DockerfileSyntaxError(line, `heredocs are not supported by this parser (${keyword})`);
  }
  return { keyword, flags, args: rest, exec: execForm(rest), line };
}

function complete(
  raw: RawInstruction,
  scope: Record<string, string | undefined>,
  escape: string,
  workdir: string,
): Instruction {
  const vars = SUBSTITUTING.has(raw.keyword) ? scope : undefined;
  const words = raw.exec ?? lexWords(raw.args, vars, escape, raw.line);
  return { ...raw, words, workdir };
}

function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  try {
    const parsed: unknown = JSON.parse(args);
    return Array.isArray(parsed) && parsed.every((v) => typeof v === 'string') ? parsed : undefined;
  } catch {
    return undefined; // Docker runs a malformed JSON array in shell form.
  }
}

function argDeclarations(instruction: Instruction): [string, string | undefined][] {
  return instruction.words.map((word) => {
    const eq = word.indexOf('=');
    return eq < 0 ? [word, undefined] : [word.slice(0, eq), word.slice(eq + 1)];
  });
}

function envAssignments(instruction: Instruction): [string, string][] {
  const [first, ...rest] = instruction.words;
  if (first === undefined) throw new DockerfileSyntaxError(instruction.line, 'ENV needs a name and a value');
  // Legacy form `ENV NAME value with spaces`.
  if (!first.includes('=')) return [[first, rest.join(' ')]];
  return instruction.words.map((word) => {
    const eq = word.indexOf('=');
    if (eq <= 0) throw new DockerfileSyntaxError(instruction.line, `ENV expects NAME=value, got "${word}"`);
    return [word.slice(0, eq), word.slice(eq + 1)];
  });
}

/** Shell-like words: quotes removed, the escape character honoured, variables substituted when `vars` is given. */
function lexWords(
  text: string,
  vars: Record<string, string | undefined> | undefined,
  escape: string,
  line: number,
): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  const substitute = (): void => {
    const expanded = expandVariable(text, i, vars!, line);
    word += expanded.value;
    i = expanded.next;
  };
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
      continue;
    }
    inWord = true;
    if (c === escape && i + 1 < text.length) {
      word += text[i + 1];
      i += 2;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new DockerfileSyntaxError(line, 'unterminated single quote');
      word += text.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === escape && i + 1 < text.length && ['"', '$', escape].includes(text[i + 1]!)) {
          word += text[i + 1];
          i += 2;
        } else if (text[i] === '$' && vars) substitute();
        else word += text[i++];
      }
      if (i >= text.length) throw new DockerfileSyntaxError(line, 'unterminated double quote');
      i++;
    } else if (c === '$' && vars) substitute();
    else {
      word += c;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}

function expandVariable(
  text: string,
  at: number,
  vars: Record<string, string | undefined>,
  line: number,
): { value: string; next: number } {
  if (text[at + 1] === '{') {
    const end = text.indexOf('}', at + 2);
    const braced = end < 0 ? undefined : /^([A-Za-z_]\w*)(?:(:[-+])([\s\S]*))?$/.exec(text.slice(at + 2, end));
    if (!braced) throw new DockerfileSyntaxError(line, `bad substitution at "${text.slice(at, at + 20)}"`);
    const value = vars[braced[1]!];
    const set = value !== undefined && value !== '';
    let result = value ?? '';
    if (braced[2] === ':-') result = set ? value : braced[3]!;
    if (braced[2] === ':+') result = set ? braced[3]! : '';
    return { value: result, next: end + 1 };
  }
  const name = /^[A-Za-z_]\w*/.exec(text.slice(at + 1));
  if (!name) return { value: '$', next: at + 1 };
  return { value: vars[name[0]] ?? '', next: at + 1 + name[0].length };
}
