import { fork, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { DayOptions, DayResult } from './schedulingDay.js';

/** A day of the model (the poll loop in process) or of the real daemon over loopback HTTP. */
export type DayKind = 'model' | 'daemon';

export interface DayJob {
  readonly id: number;
  readonly kind: DayKind;
  readonly options: DayOptions;
}

export type DayReply = { id: number; result: DayResult; cpuSeconds: number } | { id: number; error: string };

interface Waiting {
  readonly job: DayJob;
  readonly label: string;
  readonly resolve: (result: DayResult) => void;
  readonly reject: (error: Error) => void;
}

/**
 * Runs simulated days in child processes, one day at a time per process and one process per
 * core: a day is single-threaded CPU work, so two cores finish the section in half the time.
 * Days start in the order they are asked for (ask for the longest first). Each finished day
 * prints a line, so a long section shows it is moving.
 */
export class DayPool {
  private readonly queue: Waiting[] = [];
  private readonly running = new Map<ChildProcess, Waiting & { startedAt: number }>();
  private readonly idle: ChildProcess[] = [];
  private readonly children: ChildProcess[] = [];
  private nextId = 0;
  private asked = 0;
  private done = 0;
  private cpuSeconds = 0;
  private closed = false;

  constructor(
    readonly size = availableParallelism(),
    private readonly log: (line: string) => void = (line) => console.log(line),
  ) {}

  /** One day, run when a process is free; `label` names it in the progress line. */
  run(kind: DayKind, options: DayOptions, label: string): Promise<DayResult> {
    if (this.closed) return Promise.reject(new Error('the day pool is closed'));
    this.asked++;
    return new Promise<DayResult>((resolve, reject) => {
      this.queue.push({ job: { id: this.nextId++, kind, options }, label, resolve, reject });
      this.dispatch();
    });
  }

  /** Days finished, and the CPU they took: what the section costs whatever the machine's load. */
  get finished(): { days: number; cpuMinutes: number } {
    return { days: this.done, cpuMinutes: this.cpuSeconds / 60 };
  }

  /** Ends the child processes; days still queued or running fail. */
  close(): void {
    this.closed = true;
    for (const child of this.children) child.kill();
    for (const waiting of [...this.queue.splice(0), ...this.running.values()])
      waiting.reject(new Error(`${waiting.label}: the day pool closed first`));
    this.running.clear();
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const child = this.idle.pop() ?? (this.children.length < this.size ? this.spawn() : undefined);
      const waiting = child && this.queue.shift();
      if (!child || !waiting) return;
      this.running.set(child, { ...waiting, startedAt: performance.now() });
      child.send(waiting.job);
    }
  }

  private spawn(): ChildProcess {
    const child = fork(join(import.meta.dirname, 'schedulingDayWorker.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.children.push(child);
    child.on('message', (reply: DayReply) => this.answered(child, reply));
    child.once('exit', (code, signal) => {
      const waiting = this.running.get(child);
      this.running.delete(child);
      // A process that died is not given another day; a new one takes its place if days remain.
      for (const list of [this.idle, this.children]) {
        const at = list.indexOf(child);
        if (at >= 0) list.splice(at, 1);
      }
      if (this.closed) return;
      waiting?.reject(new Error(`${waiting.label}: its process exited (${signal ?? code})`));
      this.dispatch();
    });
    return child;
  }

  private answered(child: ChildProcess, reply: DayReply): void {
    const waiting = this.running.get(child);
    this.running.delete(child);
    this.idle.push(child);
    if (waiting) {
      this.done++;
      const seconds = Math.round((performance.now() - waiting.startedAt) / 1000);
      const cpu = 'error' in reply ? '' : `, ${Math.round(reply.cpuSeconds)} s of CPU`;
      if ('cpuSeconds' in reply) this.cpuSeconds += reply.cpuSeconds;
      this.log(`  day ${this.done}/${this.asked}: ${waiting.label} (${seconds} s${cpu})`);
      if ('error' in reply) waiting.reject(new Error(`${waiting.label}: ${reply.error}`));
      else waiting.resolve(reply.result);
    }
    this.dispatch();
  }
}
