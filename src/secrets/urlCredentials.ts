/**
 * URLs with credentials in them (`amqp://bob:S3cr3tPW@mq:5672`, `redis://:token@cache`,
 * `nats://token@nats`) as they may be shown: the userinfo replaced by `<redacted>`. Applied to
 * every text that may hold a URL before it is printed, logged or stored: configuration errors,
 * log lines, `status`. Before, configuration errors printed broker URLs in full.
 */
export function redactUrlCredentials(text: string): string {
  if (!text.includes('@')) return text;
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi, '$1<redacted>@');
}
