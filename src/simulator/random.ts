/** What every random stream of one simulated company is derived from (see companySeed). */
export type CompanySeed = number | string;

/**
 * Seeded pseudo-random numbers: sfc32 seeded through the cyrb128 string hash.
 *
 * Every stream is derived from the simulator seed plus a label (`Random.derive(seed, 'chunk',
 * 'career', 17)`), so consuming one stream never shifts another: a chunk of career activity is
 * identical whether or not the skill log, a fault draw or a test's appended entry came first.
 */
export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  private constructor(seed: readonly [number, number, number, number]) {
    [this.a, this.b, this.c, this.d] = seed;
    // sfc32's first outputs are correlated with the seed words; discard them.
    for (let i = 0; i < 12; i++) this.next();
  }

  static derive(...parts: ReadonlyArray<string | number>): Random {
    return new Random(cyrb128(parts.join('\u001f')));
  }

  /** Uniform in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return probability > 0 && this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('cannot pick from an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** Waiting time of a Poisson process with `ratePerMs` events per millisecond. */
  exponential(ratePerMs: number): number {
    return -Math.log(1 - this.next()) / ratePerMs;
  }

  /** Index drawn with probability proportional to its weight, from ascending cumulative weights. */
  weightedIndex(cumulative: readonly number[]): number {
    const total = cumulative[cumulative.length - 1] ?? 0;
    const target = this.next() * total;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((cumulative[mid] ?? 0) > target) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  string(length: number, alphabet = BASE36): string {
    let out = '';
    for (let i = 0; i < length; i++) out += alphabet[Math.floor(this.next() * alphabet.length)];
    return out;
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }
}

export const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';
export const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function cyrb128(input: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < input.length; i++) {
    const k = input.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}
