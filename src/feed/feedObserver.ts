export type FeedMode = 'page' | 'stream';

/** What the feed tells the metrics: answers by mode and status, open streams, events sent. */
export interface FeedObserver {
  /** A request of the feed's paths ended; `status` undefined when the client left before an answer. */
  feedAnswered(mode: FeedMode, status: number | undefined): void;
  feedStreamOpened(): void;
  /** Called once for every feedStreamOpened, however the stream ended. */
  feedStreamClosed(): void;
  feedEventsServed(mode: FeedMode, count: number): void;
}
