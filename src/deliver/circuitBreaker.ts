import type { CircuitBreakerConfig } from '../sinkContract/deliveryConfig.js';
import type { CircuitState } from '../store/storeRecords.js';

/**
 * Stops hammering a destination that keeps failing: after `failureThreshold` failed writes in a row
 * the circuit opens and nothing is sent until the cool-down ends; then one probe goes out
 * (half-open). Success closes the circuit; failure opens it again for twice as long.
 */
export class CircuitBreaker {
  private stateValue: CircuitState = 'closed';
  private failures = 0;
  private openUntil = 0;
  private cooldown: number;

  constructor(private readonly config: CircuitBreakerConfig) {
    this.cooldown = config.cooldownMs;
  }

  /** The state at `now`: an open circuit whose cool-down is over becomes half-open. */
  state(now: number): CircuitState {
    if (this.stateValue === 'open' && now >= this.openUntil) this.stateValue = 'half-open';
    return this.stateValue;
  }

  /** When an open circuit lets the probe through. */
  get reopensAt(): number {
    return this.openUntil;
  }

  /** How many writes may be in flight at `now`: none while open, one probe while half-open. */
  allowance(now: number, maxInFlight: number): number {
    const state = this.state(now);
    return state === 'open' ? 0 : state === 'half-open' ? 1 : maxInFlight;
  }

  recordSuccess(): void {
    this.stateValue = 'closed';
    this.failures = 0;
    this.cooldown = this.config.cooldownMs;
  }

  /** Returns true when this failure opened the circuit. */
  recordFailure(now: number): boolean {
    this.failures++;
    if (this.config.failureThreshold === 0) return false;
    if (this.stateValue === 'half-open') {
      this.cooldown = Math.min(this.config.maxCooldownMs, this.cooldown * 2);
      return this.open(now);
    }
    if (this.stateValue === 'closed' && this.failures >= this.config.failureThreshold) return this.open(now);
    return false;
  }

  /**
   * Opens the circuit until `until`, whatever the threshold: the destination failed as a whole and
   * the endpoint schedule decides the pause. Then one probe, as after any cool-down.
   */
  holdOpenUntil(until: number): void {
    this.stateValue = 'open';
    this.openUntil = until;
  }

  private open(now: number): boolean {
    this.stateValue = 'open';
    this.openUntil = now + this.cooldown;
    return true;
  }
}
