import { z } from 'zod';

/**
 * One entry of an activity log, as the service sends it (spec 2.8 plus the per-log extra
 * fields of section 6).
 *
 * Tolerant where the spec is open: unknown fields are kept verbatim (they reach consumers in
 * the event's `data`), `event`, `performedAt` and the rest may be null or absent.
 * Strict where it speaks: `id` is required and must be a non-empty string, because
 * deduplication and event ids are built on it; a timestamp that is present must parse.
 */
export const activityEntrySchema = z
  .object({
    id: z.string().min(1, 'entry id must be a non-empty string'),
    event: z.string().nullable().optional(),
    description: z.string().nullable().optional(),
    performedById: z.string().nullable().optional(),
    performedAt: z
      .string()
      .refine((s) => !Number.isNaN(Date.parse(s)), 'performedAt is not an ISO 8601 timestamp')
      .nullable()
      .optional(),
  })
  .passthrough();

export type ActivityEntry = z.infer<typeof activityEntrySchema>;

/** performedAt in epoch milliseconds, or null when the service did not say. */
export function performedAtMs(entry: ActivityEntry): number | null {
  return entry.performedAt ? Date.parse(entry.performedAt) : null;
}
