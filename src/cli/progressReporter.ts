import { SingleBar } from 'cli-progress';

/** Progress of one long piece of work (`store migrate`, `replay`), told as it advances. */
export interface ProgressReporter {
  /** `done` units of `total` settled so far; called as often as the work likes. */
  update(done: number): void;
  /** The work ended (done or not): a bar is closed, a last line says where it stopped. */
  stop(): void;
}

export interface ProgressOptions {
  /** What is being done, starting each line: `store migrate default`. */
  label: string;
  /** What is counted, plural: `rows`, `events`. */
  unit: string;
  total: number;
  /** Where progress goes: a terminal gets a bar, anything else a line now and then. */
  stream: NodeJS.WritableStream & { isTTY?: boolean };
  /** Monotonic milliseconds; the lines' rate, ETA and pacing are measured on it. */
  now: () => number;
}

/** Least time between two lines when not on a terminal. */
const LINE_INTERVAL_MS = 2_000;

/**
 * A bar (cli-progress) on a terminal; elsewhere (a pipe, a log collector) plain lines, at most one
 * every LINE_INTERVAL_MS unless a tenth more of the work is done, with counts, rate and ETA, and one
 * at the end: a bar's carriage returns would be one endless line in a log.
 */
export function createProgressReporter(options: ProgressOptions): ProgressReporter {
  return options.stream.isTTY === true ? barReporter(options) : lineReporter(options);
}

function barReporter(options: ProgressOptions): ProgressReporter {
  const bar = new SingleBar({
    stream: options.stream,
    format: `${options.label} [{bar}] {percentage}% | {value}/{total} ${options.unit} | {eta_formatted} left`,
    hideCursor: true,
    clearOnComplete: false,
  });
  bar.start(options.total, 0);
  return {
    update: (done) => bar.update(Math.min(done, options.total)),
    stop: () => bar.stop(),
  };
}

function lineReporter(options: ProgressOptions): ProgressReporter {
  const started = options.now();
  let last: LineState = { at: started, done: 0 };
  let latest = 0;
  const write = (done: number, at: number): void => {
    options.stream.write(`${formatProgressLine(options, done, at - started)}\n`);
    last = { at, done };
  };
  return {
    update: (done) => {
      latest = done;
      const at = options.now();
      if (progressLineDue(last, { at, done }, options.total, LINE_INTERVAL_MS)) write(done, at);
    },
    stop: () => {
      if (latest !== last.done || latest === 0) write(latest, options.now());
    },
  };
}

interface LineState {
  at: number;
  done: number;
}

/**
 * Whether a new line is due: `intervalMs` since the last one (or the start), or another tenth of
 * the work done since a first line. Work that ends within `intervalMs` gets only its last line.
 */
export function progressLineDue(last: LineState, next: LineState, total: number, intervalMs: number): boolean {
  if (next.done <= last.done) return false;
  if (next.at - last.at >= intervalMs) return true;
  if (last.done === 0) return false;
  const tenth = (done: number): number => (total > 0 ? Math.floor((done * 10) / total) : 0);
  return tenth(next.done) > tenth(last.done);
}

/** `store migrate default: 12000/120548 rows (10%), 6000 rows/s, about 18 s left` */
export function formatProgressLine(
  options: Pick<ProgressOptions, 'label' | 'unit' | 'total'>,
  done: number,
  elapsedMs: number,
): string {
  const { label, unit, total } = options;
  const percent = total > 0 ? Math.floor((done * 100) / total) : 100;
  const head = `${label}: ${done}/${total} ${unit} (${percent}%)`;
  if (done >= total) return `${head}, done in ${formatSeconds(elapsedMs)}`;
  if (elapsedMs <= 0 || done === 0) return head;
  const perSecond = (done * 1000) / elapsedMs;
  const leftMs = ((total - done) / perSecond) * 1000;
  return `${head}, ${Math.round(perSecond)} ${unit}/s, about ${formatSeconds(leftMs)} left`;
}

function formatSeconds(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  return s < 7_200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3_600)} h`;
}
