/**
 * URLs with credentials in them (`amqp://bob:S3cr3tPW@mq:5672`, `redis://:token@cache`,
 * `nats://token@nats`) as they may be shown: the userinfo replaced by `<redacted>`. Applied to
 * every text that may hold a URL before it is printed, logged or stored: configuration errors,
 * log lines, `status`.
 */
export function redactUrlCredentials(text: string): string {
  if (!text.includes('@')) return text;
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi, '$1<redacted>@');
}

/**
 * `url` with `password` as the password of its user, percent-encoded as a URL must carry it (a
 * `%`, `@` or `/` in a password would otherwise change the URL), so that a password kept in a
 * file of its own (`passwordFile`) reaches a client that reads credentials from the URL only.
 * The URL must name a user and carry no password of its own: callers refuse both beforehand.
 */
export function withUrlPassword(url: string, password: string): string {
  const parsed = new URL(url);
  parsed.password = encodeURIComponent(password);
  return parsed.href;
}
