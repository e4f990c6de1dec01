/** An edge's unit: a node with no child, a node with more than one (its edges in a Map). */
const NONE = -1;
const MANY = -2;

/**
 * Aho-Corasick over the registered secrets, written backwards, so that one right-to-left pass
 * over a line finds, at every position, the length of the longest secret starting there (the
 * automaton's "longest match ending here", read in reverse). The pass takes one transition per
 * UTF-16 unit of the line plus at most as many failure steps in all: linear in the line whatever
 * the secrets share. Built once and never changed: the registry keeps a few of them.
 */
export class SecretAutomaton {
  /**
   * The edges. Most nodes of a trie of keys have one child, kept in two arrays (its unit, or
   * NONE or MANY, and the child); a node of more has a Map: one Map per node would be most of the
   * scrubber's time, building and walking.
   */
  private readonly onlyUnit: number[] = [MANY];
  private readonly onlyChild: number[] = [NONE];
  private readonly branches = new Map<number, Map<number, number>>([[0, new Map()]]);
  private readonly failure: number[] = [0];
  /** The length of the longest secret that ends (written backwards) at each node, or 0. */
  private readonly longest: number[] = [0];

  constructor(readonly secrets: readonly string[]) {
    for (const secret of secrets) {
      let node = 0;
      for (let i = secret.length - 1; i >= 0; i--) {
        const unit = secret.charCodeAt(i);
        node = this.child(node, unit) ?? this.addChild(node, unit);
      }
      this.longest[node] = secret.length;
    }
    // Breadth first, so a node's failure (a shallower node) is complete before the node's.
    const queue: number[] = [];
    this.forChildren(0, (_, child) => queue.push(child));
    for (let at = 0; at < queue.length; at++) {
      const node = queue[at]!;
      // A node's own secret is its whole depth, longer than any its failure leads to.
      if (this.longest[node] === 0) this.longest[node] = this.longest[this.failure[node]!]!;
      this.forChildren(node, (unit, child) => {
        let fallback = this.failure[node]!;
        let target = this.child(fallback, unit);
        while (target === undefined && fallback !== 0) {
          fallback = this.failure[fallback]!;
          target = this.child(fallback, unit);
        }
        this.failure[child] = target ?? 0;
        queue.push(child);
      });
    }
  }

  /**
   * For each position of `text` where a secret starts, the longest one's length, raised into
   * `found` (position -> length). Returns the steps taken (transitions and failure steps).
   */
  longestStarts(text: string, found: Map<number, number>): number {
    let steps = 0;
    let node = 0;
    for (let i = text.length - 1; i >= 0; i--) {
      const unit = text.charCodeAt(i);
      let next = this.child(node, unit);
      while (next === undefined && node !== 0) {
        node = this.failure[node]!;
        next = this.child(node, unit);
        steps++;
      }
      node = next ?? 0;
      steps++;
      const length = this.longest[node]!;
      if (length > 0 && length > (found.get(i) ?? 0)) found.set(i, length);
    }
    return steps;
  }

  private child(node: number, unit: number): number | undefined {
    const only = this.onlyUnit[node]!;
    if (only === unit) return this.onlyChild[node];
    return only === MANY ? this.branches.get(node)!.get(unit) : undefined;
  }

  private addChild(node: number, unit: number): number {
    const child = this.failure.length;
    this.failure.push(0);
    this.longest.push(0);
    this.onlyUnit.push(NONE);
    this.onlyChild.push(NONE);
    const only = this.onlyUnit[node]!;
    if (only === NONE) {
      this.onlyUnit[node] = unit;
      this.onlyChild[node] = child;
    } else if (only === MANY) this.branches.get(node)!.set(unit, child);
    else {
      this.branches.set(
        node,
        new Map([
          [only, this.onlyChild[node]!],
          [unit, child],
        ]),
      );
      this.onlyUnit[node] = MANY;
    }
    return child;
  }

  private forChildren(node: number, visit: (unit: number, child: number) => void): void {
    const only = this.onlyUnit[node]!;
    if (only === MANY) for (const [unit, child] of this.branches.get(node)!) visit(unit, child);
    else if (only !== NONE) visit(only, this.onlyChild[node]!);
  }
}
