import { z } from 'zod';

/*
 * Config fields several sink types share, declared once. Each takes its description, since what
 * a limit or a file means differs per sink, and the configuration reference is generated from it.
 */

/** A time limit in ms: at least 100 ms (below that nothing on a network succeeds), at most `max`. */
export function timeLimitMs(defaultMs: number, max: number, description: string) {
  return z.number().int().min(100).max(max).default(defaultMs).describe(description);
}

/** Limit on connecting to a broker: 10 s by default, 2 minutes at most. */
export function connectTimeoutMs(description: string) {
  return timeLimitMs(10_000, 120_000, description);
}

/**
 * `text` as a URL, or undefined when it is none. For refinements: zod runs them even after the URL
 * check failed, and a `new URL` that throws there ends config loading with a stack trace instead
 * of reporting the field.
 */
export function urlOrUndefined(text: string): URL | undefined {
  return URL.canParse(text) ? new URL(text) : undefined;
}

/** True when `part` of a URL percent-decodes: a stray `%` or `%zz` makes decodeURIComponent throw. */
export function percentDecodes(part: string): boolean {
  try {
    decodeURIComponent(part);
    return true;
  } catch {
    return false;
  }
}

const CREDENTIALS_IN_URL = 'put credentials in username and password, not in the URL';

/**
 * A broker URL whose scheme matches `protocol`, carrying no user name or password: those go in
 * their own fields, so they are treated as secrets and never shown with the address. `accepts`
 * may refuse more (with the same `refusal`).
 */
export function credentialFreeUrl(options: {
  protocol: RegExp;
  /** Says which schemes are meant: `must be a redis:// or rediss:// URL`. */
  message: string;
  refusal?: string;
  accepts?: (url: URL) => boolean;
}) {
  const { protocol, message, refusal = CREDENTIALS_IN_URL, accepts = () => true } = options;
  return z.url({ protocol, message }).refine((text) => {
    const url = urlOrUndefined(text);
    // Not a URL: z.url reported that already.
    return url === undefined || (url.username === '' && url.password === '' && accepts(url));
  }, refusal);
}

/**
 * `username`, `password` (a secret: registered, redacted in errors and logs) and `passwordFile`,
 * the same password from a file of its own.
 */
export function loginFields(usernameDescription: string, passwordDescription = 'Secret: password of `username`.') {
  return {
    username: z.string().min(1).optional().describe(usernameDescription),
    password: z.string().min(1).optional().describe(passwordDescription),
    passwordFile: secretFile('`password`'),
  };
}

/**
 * A file holding a secret (a Docker or Kubernetes secret mount), so that it need not be written
 * into the config or an environment variable. Read when the sink is built, at start and on each
 * reload (SIGHUP), which is how a rotated secret is taken up.
 */
export function secretFile(what: string) {
  return z
    .string()
    .min(1)
    .optional()
    .describe(
      `File holding ${what} (a Docker or Kubernetes secret mount), read at start and on each reload; ` +
        `one trailing newline is dropped. Not together with ${what}.`,
    );
}

/** A refinement: a secret given inline and from its file at once (which one was meant?) is refused. */
export function inlineOrFile<Inline extends string, File extends string>(
  inline: Inline,
  file: File,
): [(c: Partial<Record<Inline | File, string>>) => boolean, { message: string; path: string[] }] {
  return [
    (c) => c[inline] === undefined || c[file] === undefined,
    { message: `set either ${inline} or ${file}, not both`, path: [file] },
  ];
}

/** A PEM file of CA certificates to trust, for a destination with a private CA. */
export function caFile(description: string) {
  return z.string().min(1).optional().describe(description);
}
