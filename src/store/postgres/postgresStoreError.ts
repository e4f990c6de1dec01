import { ChangefeedError } from '../../errors.js';

/** The PostgreSQL store cannot be opened: the database refused us, or its schema is newer than this build. */
export class PostgresStoreError extends ChangefeedError {
  constructor(message: string, cause?: unknown) {
    super('STORE_ERROR', message, { cause });
  }
}
