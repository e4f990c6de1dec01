/**
 * A feed cursor is the journal's ingestion sequence (`events.seq`) of the last event a consumer
 * has, as 16 zero-padded decimal digits: opaque to consumers, ordered as strings (what the
 * CloudEvents `sequence` extension asks for) and as numbers. `0` is before the first event.
 */
const WIDTH = 16;
const CURSOR = /^[0-9]{1,16}$/;

export function formatCursor(seq: number): string {
  return String(seq).padStart(WIDTH, '0');
}

/** The sequence a cursor stands for, or undefined when `text` is not a cursor. */
export function parseCursor(text: string): number | undefined {
  if (!CURSOR.test(text)) return undefined;
  const seq = Number(text);
  return Number.isSafeInteger(seq) ? seq : undefined;
}
