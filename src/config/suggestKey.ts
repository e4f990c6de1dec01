/**
 * Edit distance with adjacent transpositions counted as one edit ("optimal string alignment"),
 * so the common typo `baseUlr` is one edit from `baseUrl`, not two.
 */
function editDistance(a: string, b: string): number {
  const cols = b.length + 1;
  const d = new Array<number>((a.length + 1) * cols).fill(0);
  const at = (i: number, j: number): number => d[i * cols + j] ?? 0;
  for (let i = 0; i <= a.length; i++) d[i * cols] = i;
  for (let j = 0; j <= b.length; j++) d[j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      d[i * cols + j] = best;
    }
  }
  return at(a.length, b.length);
}

/**
 * The known key closest to `unknown` within `maxDistance` edits, ignoring case differences
 * first (so `apikey` finds `apiKey`); undefined when nothing is close enough to be a typo.
 */
export function suggestKey(unknown: string, known: readonly string[], maxDistance = 2): string | undefined {
  let best: { key: string; distance: number } | undefined;
  for (const key of known) {
    // No fewer edits than the lengths differ by: a key of a megabyte is not compared letter by
    // letter (a table of its length times the known key's, hundreds of megabytes) to learn that.
    if (Math.abs(key.length - unknown.length) > maxDistance) continue;
    const distance = key.toLowerCase() === unknown.toLowerCase() ? 0.5 : editDistance(unknown, key);
    if (distance <= maxDistance && (!best || distance < best.distance)) best = { key, distance };
  }
  return best?.key;
}
