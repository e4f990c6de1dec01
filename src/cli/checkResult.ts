/** One line of `changefeed check`: what was checked, whether it holds, and how to fix it if not. */
export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  /** For a problem: what the user can do about it. */
  fix?: string;
}

/** A check that does not hold, with what to do about it when known. */
export function checkFailed(name: string, detail: string, fix?: string): CheckResult {
  return { name, ok: false, detail, ...(fix === undefined ? {} : { fix }) };
}

export function formatCheck(result: CheckResult): string {
  const head = `${result.ok ? 'ok     ' : 'PROBLEM'} ${result.name}: ${result.detail}`;
  return result.ok || result.fix === undefined ? head : `${head}\n        fix: ${result.fix}`;
}
