import { ChangefeedError } from '../errors.js';

/**
 * A store either engine cannot open or use: the file or database refused us, its schema is newer
 * than this build, a setting names something invalid. The message names what to fix.
 */
export class StoreError extends ChangefeedError {
  constructor(message: string, cause?: unknown) {
    super('STORE_ERROR', message, { cause });
  }
}

/** A store of an older schema than this build's, which a reader cannot migrate. */
export class OlderSchemaError extends StoreError {}
