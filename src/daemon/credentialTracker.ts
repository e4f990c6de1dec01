/**
 * Whether the service accepted the key on its last answer, for readiness. Only 2xx and 401 say
 * anything about the key itself: a 403 for a missing scope or a 5xx does not.
 */
export class CredentialTracker {
  /** Undefined before any answer. */
  private accepted: boolean | undefined;
  private problem: string | undefined;

  constructor(
    /** Where the key comes from, for the message (`CHANGEFEED_API_KEY`, a key file). */
    private readonly source: string,
  ) {}

  observe(status: number): void {
    if (status >= 200 && status < 300) {
      this.accepted = true;
      this.problem = undefined;
    } else if (status === 401) {
      this.accepted = false;
      this.problem = `the service rejected the key (401); check ${this.source}`;
    }
  }

  check(): { name: 'credential'; ok: boolean; detail?: string } {
    if (this.accepted === undefined) return { name: 'credential', ok: false, detail: 'no answer from the service yet' };
    return this.accepted ? { name: 'credential', ok: true } : { name: 'credential', ok: false, detail: this.problem };
  }
}
