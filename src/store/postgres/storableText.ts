/**
 * Text as PostgreSQL can store it. Its `text` cannot hold U+0000, which SQLite's can, and a
 * statement carrying one fails as a whole (22021): one entry id or event name with a NUL from the
 * service, or a destination's binary response body, would then stall its log or its sink for
 * ever. NULs are stored as U+FFFD instead; everything else is kept as given.
 */
export function storableText<T extends string | null | undefined>(text: T): T {
  return (typeof text === 'string' && text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text) as T;
}
