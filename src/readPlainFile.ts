import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';

/** The most a config or tenant file may hold: far above any real one, far below a parse that stalls. */
export const CONFIG_FILE_MAX_BYTES = 1024 * 1024;

/** The most a secret file may hold: a key, a password or a few webhook secrets. */
export const SECRET_FILE_MAX_BYTES = 64 * 1024;

/** The most a PEM file (CA bundle, certificate, key) may hold: a system's whole CA bundle is about 220 KB. */
export const PEM_FILE_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Why an operator's file was not read: `code` is the errno code of the open (ENOENT, EACCES...),
 * EISDIR for a directory, NOT_PLAIN_FILE for a FIFO, socket or device, TOO_LARGE past the bound;
 * `reason` says it in words for the caller's message.
 */
export class PlainFileError extends Error {
  constructor(
    readonly code: string,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'PlainFileError';
  }

  /** The errno code when the open failed as Node says it (ENOENT), else the refusal in words. */
  get brief(): string {
    return this.code === 'NOT_PLAIN_FILE' || this.code === 'TOO_LARGE' ? this.reason : this.code;
  }
}

/**
 * The UTF-8 text of `path` (through links: a mounted ConfigMap or secret is one), if it is a plain
 * file of at most `maxBytes`. Read synchronously by config loading, a SIGHUP reload and a key
 * file's rotation check, so a FIFO there would block the whole process, signals included, until
 * something wrote to it, and a device (`/dev/zero`) would fill memory: the open does not wait
 * (O_NONBLOCK, nothing to a plain file) and anything but a plain file is refused before a read.
 * A file grown past `maxBytes` after its stat is caught by reading one byte more than allowed.
 */
export function readPlainFile(path: string, maxBytes: number): string {
  let file: number;
  try {
    file = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new PlainFileError(code, OPEN_REASONS[code] ?? code);
  }
  try {
    const kind = notPlainFile(fstatSync(file));
    if (kind === 'a directory') throw new PlainFileError('EISDIR', 'it is a directory');
    if (kind) throw new PlainFileError('NOT_PLAIN_FILE', `it is ${kind}, not a plain file`);
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    let read: number;
    do {
      read = readSync(file, buffer, length, buffer.length - length, null);
      length += read;
    } while (read > 0 && length < buffer.length);
    if (length > maxBytes) throw new PlainFileError('TOO_LARGE', `it holds more than ${maxBytes} bytes`);
    return buffer.toString('utf8', 0, length);
  } finally {
    closeSync(file);
  }
}

const OPEN_REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'it does not exist',
  EACCES: 'permission denied',
  ELOOP: 'it is a symlink loop',
  ENOTDIR: 'a part of its path is not a directory',
};

/** What a file that is not a plain file is, for a message ("it is a FIFO"); undefined for a plain file. */
export function notPlainFile(stats: Stats): string | undefined {
  if (stats.isFile()) return undefined;
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  return 'of another kind';
}
