import type { LogKind } from '../logs.js';

/**
 * The event types each log can emit. The spec names only the skill log's three; the career log's
 * "about 40" and the identity provider's 13 are not shown, so these are plausible stand-ins that
 * cover every area the spec lists (section 6). The server rejects any other `event` filter value.
 *
 * `subject` tells the entry factory which related fields an event fills; `weight` is its relative
 * frequency, so common edits (skills, assignments) dominate as they would in a real workspace.
 */
export interface EventType {
  readonly name: string;
  readonly subject: string;
  readonly weight: number;
}

const careerEventTypes: readonly EventType[] = [
  // lifecycle
  { name: 'career_created', subject: 'career', weight: 1 },
  { name: 'career_updated', subject: 'career', weight: 4 },
  { name: 'career_renamed', subject: 'career', weight: 1 },
  { name: 'career_archived', subject: 'career', weight: 0.3 },
  { name: 'career_restored', subject: 'career', weight: 0.2 },
  { name: 'career_duplicated', subject: 'career', weight: 0.3 },
  // settings
  { name: 'settings_updated', subject: 'settings', weight: 2 },
  { name: 'visibility_changed', subject: 'settings', weight: 1 },
  { name: 'career_type_changed', subject: 'settings', weight: 0.5 },
  { name: 'grading_scale_changed', subject: 'settings', weight: 0.5 },
  { name: 'owner_changed', subject: 'settings', weight: 0.5 },
  // skills
  { name: 'skill_added', subject: 'skill', weight: 8 },
  { name: 'skill_removed', subject: 'skill', weight: 3 },
  { name: 'skill_level_changed', subject: 'skill', weight: 6 },
  { name: 'skill_requirement_changed', subject: 'skill', weight: 3 },
  { name: 'skill_moved', subject: 'skill', weight: 2 },
  // sections
  { name: 'section_created', subject: 'section', weight: 2 },
  { name: 'section_renamed', subject: 'section', weight: 1 },
  { name: 'section_deleted', subject: 'section', weight: 0.5 },
  { name: 'sections_reordered', subject: 'section', weight: 1 },
  // levels
  { name: 'level_created', subject: 'level', weight: 2 },
  { name: 'level_renamed', subject: 'level', weight: 1 },
  { name: 'level_deleted', subject: 'level', weight: 0.5 },
  { name: 'levels_reordered', subject: 'level', weight: 1 },
  { name: 'level_description_updated', subject: 'level', weight: 2 },
  // groups
  { name: 'group_created', subject: 'group', weight: 1 },
  { name: 'group_renamed', subject: 'group', weight: 0.5 },
  { name: 'group_deleted', subject: 'group', weight: 0.3 },
  // learnings
  { name: 'learning_added', subject: 'learning', weight: 3 },
  { name: 'learning_removed', subject: 'learning', weight: 1 },
  { name: 'learning_updated', subject: 'learning', weight: 2 },
  // assignments
  { name: 'person_assigned', subject: 'assignment', weight: 8 },
  { name: 'person_unassigned', subject: 'assignment', weight: 3 },
  { name: 'person_level_changed', subject: 'assignment', weight: 5 },
  { name: 'assignment_target_level_changed', subject: 'assignment', weight: 2 },
  // labels
  { name: 'label_added', subject: 'label', weight: 1.5 },
  { name: 'label_removed', subject: 'label', weight: 0.5 },
  // flags
  { name: 'flag_added', subject: 'flag', weight: 1 },
  { name: 'flag_removed', subject: 'flag', weight: 0.5 },
  { name: 'flag_updated', subject: 'flag', weight: 0.5 },
];

const skillEventTypes: readonly EventType[] = [
  { name: 'baseline', subject: 'version', weight: 1 },
  { name: 'version_created', subject: 'version', weight: 6 },
  { name: 'renew_training', subject: 'renewal', weight: 2 },
];

const identityProviderEventTypes: readonly EventType[] = [
  // group lifecycle
  { name: 'group_created', subject: 'group', weight: 1 },
  { name: 'group_updated', subject: 'group', weight: 1.5 },
  { name: 'group_deleted', subject: 'group', weight: 0.3 },
  // user provisioning
  { name: 'user_provisioned', subject: 'user', weight: 5 },
  { name: 'user_updated', subject: 'user', weight: 8 },
  { name: 'user_deactivated', subject: 'user', weight: 2 },
  { name: 'user_reactivated', subject: 'user', weight: 0.5 },
  // permission changes
  { name: 'access_level_changed', subject: 'permission', weight: 2 },
  { name: 'role_changed', subject: 'permission', weight: 1 },
  // career assignment
  { name: 'career_assigned', subject: 'career', weight: 3 },
  { name: 'career_unassigned', subject: 'career', weight: 1 },
  // membership
  { name: 'group_member_added', subject: 'membership', weight: 6 },
  { name: 'group_member_removed', subject: 'membership', weight: 3 },
];

export const EVENT_TYPES: Readonly<Record<LogKind, readonly EventType[]>> = {
  career: careerEventTypes,
  skill: skillEventTypes,
  identity_provider: identityProviderEventTypes,
};

/** Every event name each log accepts in its `event` filter. */
export const EVENT_CATALOGS = mapLogs((types) => types.map((t) => t.name));

const catalogSets = mapLogs((types) => new Set(types.map((t) => t.name)));

export function isKnownEvent(log: LogKind, name: string): boolean {
  return catalogSets[log].has(name);
}

/** Ascending cumulative weights per log, for Random.weightedIndex. */
export const CUMULATIVE_EVENT_WEIGHTS = mapLogs((types) => {
  let sum = 0;
  return types.map((t) => (sum += t.weight));
});

function mapLogs<T>(of: (types: readonly EventType[]) => T): Readonly<Record<LogKind, T>> {
  return {
    career: of(careerEventTypes),
    skill: of(skillEventTypes),
    identity_provider: of(identityProviderEventTypes),
  };
}
