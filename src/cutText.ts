/** `text` up to `max` characters, marked "... (cut)" when longer; a surrogate pair is not split. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max).replace(/[\uD800-\uDBFF]$/, '')}... (cut)`;
}
