import type { LogKind } from '../logs.js';
import type { Entry } from './activityStore.js';
import type { CompanyDirectory, NamedRef } from './companyDirectory.js';
import { CUMULATIVE_EVENT_WEIGHTS, EVENT_TYPES, isKnownEvent } from './eventCatalog.js';
import { Random, type CompanySeed } from './random.js';

export interface EntryShares {
  nullPerformedAtShare: number;
  nullEventShare: number;
  unknownFieldsShare: number;
}

/** Hands out entry ids that are unique across the whole simulator, generated or appended. */
export class EntryIds {
  private readonly used = new Set<string>();

  next(random: Random): string {
    for (;;) {
      const id = `act_${random.string(12)}`;
      if (!this.used.has(id)) {
        this.used.add(id);
        return id;
      }
    }
  }

  /** Records an id chosen by a test; duplicates are allowed on purpose (a service may repeat rows). */
  claim(id: string): void {
    this.used.add(id);
  }
}

const IDP_SOURCES = ['scim', 'scim', 'scim', 'saml_jit', 'directory_sync'];
const ACCESS_LEVELS = ['employee', 'manager', 'full_access', 'administrator'];
const ROLES = ['none', 'director', 'executive', 'global_administrator'];
const RENEWAL_OPTIONS = ['all_holders', 'expired_only', 'no_renewal'];
const BULK_EVENTS = new Set(['person_assigned', 'person_unassigned', 'person_level_changed']);

/**
 * Builds entries with the field shapes of spec 2.8 and section 6. Which related fields are set
 * follows from the event's subject, so filtering by relatedPersonId or bulkGroupId finds the rows a
 * consumer would expect (assignments name a person, skill edits a skill, and so on).
 */
export class EntryFactory {
  private readonly structure = new Map<string, { sections: string[]; levels: string[] }>();
  private readonly authors: readonly NamedRef[];

  constructor(
    private readonly seed: CompanySeed,
    private readonly directory: CompanyDirectory,
    private readonly ids: EntryIds,
    private readonly shares: EntryShares,
  ) {
    // A handful of people edit careers and skills; everyone can be the subject of one.
    this.authors = directory.people.slice(0, 25);
  }

  /**
   * A fresh entry of `log` that happened at `recordedAt`. `event` forces the event type;
   * `bulkGroups` lets assignment rows of one generation chunk share a bulk operation.
   */
  create(
    log: LogKind,
    objectId: string | null,
    recordedAt: number,
    random: Random,
    opts: { event?: string | null; applyShares: boolean; bulkGroups?: Map<string, string> },
  ): Entry {
    const eventName =
      opts.event !== undefined && opts.event !== null && isKnownEvent(log, opts.event)
        ? opts.event
        : (EVENT_TYPES[log][random.weightedIndex(CUMULATIVE_EVENT_WEIGHTS[log])]?.name ?? 'unknown');
    const subject = EVENT_TYPES[log].find((t) => t.name === eventName)?.subject ?? 'unknown';
    const performer = log === 'identity_provider' || random.chance(0.05) ? null : random.pick(this.authors);
    const entry: Entry = {
      id: this.ids.next(random),
      event: eventName,
      description: null,
      performedById: performer?.id ?? null,
      performedAt: new Date(recordedAt).toISOString(),
    };
    if (log === 'career') this.fillCareer(entry, objectId ?? '', subject, random, opts.bulkGroups);
    else if (log === 'skill') this.fillSkill(entry, objectId ?? '', random);
    else this.fillIdentityProvider(entry, subject, random);
    if (opts.applyShares) {
      if (random.chance(this.shares.nullEventShare)) entry.event = null;
      if (random.chance(this.shares.nullPerformedAtShare)) entry.performedAt = null;
      if (random.chance(this.shares.unknownFieldsShare)) {
        entry.x_internal = { shard: random.int(0, 63), traceId: random.string(16), legacy: random.chance(0.5) };
      }
    }
    return entry;
  }

  private fillCareer(
    entry: Entry,
    careerId: string,
    subject: string,
    random: Random,
    bulkGroups?: Map<string, string>,
  ): void {
    const { sections, levels } = this.careerStructure(careerId);
    const skills = this.directory.list('skill');
    const skill = subject === 'skill' && skills.length > 0 ? random.pick(skills) : null;
    const person = subject === 'assignment' ? random.pick(this.directory.people) : null;
    let bulkGroupId: string | null = null;
    if (entry.event !== null && BULK_EVENTS.has(entry.event) && bulkGroups && random.chance(0.5)) {
      bulkGroupId = bulkGroups.get(careerId) ?? `blk_${random.string(10)}`;
      bulkGroups.set(careerId, bulkGroupId);
    }
    const target = skill?.name ?? person?.name ?? null;
    entry.description = `${sentence(entry.event)}${target ? `: ${target}` : ''}`;
    entry.emailSent = subject === 'assignment' ? random.chance(0.6) : false;
    entry.relatedPersonId = person?.id ?? null;
    entry.relatedSkillId = skill?.id ?? null;
    entry.relatedSectionId = subject === 'section' || subject === 'skill' ? random.pick(sections) : null;
    entry.relatedLevelId =
      subject === 'level' || entry.event === 'skill_level_changed' || entry.event === 'person_level_changed'
        ? random.pick(levels)
        : null;
    entry.bulkGroupId = bulkGroupId;
  }

  private fillSkill(entry: Entry, skillId: string, random: Random): void {
    const name = this.directory.get('skill', skillId)?.name ?? skillId;
    entry.description = `${sentence(entry.event)} for skill ${name}`;
    entry.versionId = entry.event === 'renew_training' ? null : `ver_${random.string(10)}`;
    entry.affectedUserCount = random.int(0, 400);
    entry.renewalOption = entry.event === 'renew_training' ? random.pick(RENEWAL_OPTIONS) : null;
  }

  private fillIdentityProvider(entry: Entry, subject: string, random: Random): void {
    const event = entry.event ?? '';
    const person = subject === 'group' ? null : random.pick(this.directory.people);
    const group = subject === 'group' || subject === 'membership' ? random.pick(this.directory.groups) : null;
    const source = random.pick(IDP_SOURCES);
    const [oldValue, newValue] = this.beforeAfter(event, random, person, group);
    entry.description = `${sentence(event)}: ${person?.name ?? group?.name ?? ''}`.trim();
    entry.oldValue = oldValue;
    entry.newValue = newValue;
    entry.payloadSummary = `${source} ${person ? `user ${person.name}` : `group ${group?.name ?? ''}`}: ${event}`;
    entry.source = source;
    entry.externalMemberId = person ? `00u${random.string(17)}` : null;
    entry.relatedPersonId = person?.id ?? null;
    entry.relatedPersonName = person?.name ?? null;
    entry.relatedGroupId = group?.id ?? null;
    entry.relatedGroupName = group?.name ?? null;
  }

  private beforeAfter(
    event: string,
    random: Random,
    person: NamedRef | null,
    group: NamedRef | null,
  ): [string | null, string | null] {
    const email = person ? `${person.name.toLowerCase().replace(/\s+/g, '.')}@example.com` : null;
    const careers = this.directory.list('career');
    const career = careers.length > 0 ? random.pick(careers).name : null;
    switch (event) {
      case 'group_created':
      case 'group_member_added':
        return [null, group?.name ?? null];
      case 'group_deleted':
      case 'group_member_removed':
        return [group?.name ?? null, null];
      case 'group_updated':
        return [
          group?.name ?? null,
          `${group?.name ?? 'Group'} (${random.pick(['renamed', 'restructured', 'merged'])})`,
        ];
      case 'user_provisioned':
        return [null, email];
      case 'user_updated':
        return [random.pick(this.directory.groups).name, random.pick(this.directory.groups).name];
      case 'user_deactivated':
        return ['active', 'inactive'];
      case 'user_reactivated':
        return ['inactive', 'active'];
      case 'access_level_changed':
        return twoDistinct(ACCESS_LEVELS, random);
      case 'role_changed':
        return twoDistinct(ROLES, random);
      case 'career_assigned':
        return [null, career];
      case 'career_unassigned':
        return [career, null];
      default:
        return [null, null];
    }
  }

  private careerStructure(careerId: string): { sections: string[]; levels: string[] } {
    let structure = this.structure.get(careerId);
    if (!structure) {
      // Derived from the career id alone, so a career's sections and levels never change.
      const random = Random.derive(this.seed, 'structure', careerId);
      structure = {
        sections: Array.from({ length: random.int(3, 7) }, () => `sec_${random.string(10)}`),
        levels: Array.from({ length: random.int(3, 8) }, () => `lvl_${random.string(10)}`),
      };
      this.structure.set(careerId, structure);
    }
    return structure;
  }
}

function twoDistinct(values: readonly string[], random: Random): [string, string] {
  const first = random.int(0, values.length - 1);
  const second = (first + random.int(1, values.length - 1)) % values.length;
  return [values[first] as string, values[second] as string];
}

function sentence(event: string | null): string {
  if (!event) return 'Change recorded';
  const words = event.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}
