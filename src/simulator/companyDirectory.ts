import { Random, type CompanySeed } from './random.js';

/** A career or a skill as the discovery lists show it. */
export interface DirectoryObject {
  readonly id: string;
  readonly name: string;
  readonly createdAt: string;
}

export interface NamedRef {
  readonly id: string;
  readonly name: string;
}

export type ObjectLog = 'career' | 'skill';

const FIRST_NAMES = [
  'Ada',
  'Ben',
  'Chloe',
  'Dev',
  'Elif',
  'Femi',
  'Greta',
  'Hiro',
  'Ines',
  'Jonas',
  'Kira',
  'Luis',
  'Mina',
  'Noah',
  'Olga',
  'Priya',
  'Quinn',
  'Rafa',
  'Sana',
  'Tomas',
  'Uma',
  'Viktor',
  'Wen',
  'Yara',
  'Zoe',
];
const LAST_NAMES = [
  'Almeida',
  'Berg',
  'Chen',
  'Dubois',
  'Eriksen',
  'Fischer',
  'Garcia',
  'Haddad',
  'Ito',
  'Jensen',
  'Kowalski',
  'Lopez',
  'Moreau',
  'Nakamura',
  'Okafor',
  'Petrov',
  'Rossi',
  'Schmidt',
  'Tanaka',
  'Usman',
  'Varga',
  'Weber',
  'Yilmaz',
  'Zhang',
];
const SENIORITY = ['Junior', 'Associate', 'Senior', 'Staff', 'Principal', 'Lead'];
const DISCIPLINES = [
  'Data Engineer',
  'Product Designer',
  'Backend Engineer',
  'Frontend Engineer',
  'Product Manager',
  'Sales Executive',
  'Support Specialist',
  'Recruiter',
  'Financial Analyst',
  'Site Reliability Engineer',
  'Marketing Manager',
  'Nurse',
  'Electrician',
  'Store Manager',
];
const SKILLS = [
  'TypeScript',
  'SQL',
  'Negotiation',
  'Kubernetes',
  'Public Speaking',
  'Forklift Operation',
  'First Aid',
  'Data Visualisation',
  'Coaching',
  'Python',
  'Accessibility',
  'Budgeting',
  'Customer Empathy',
  'Incident Response',
  'Spanish',
  'Excel',
  'Figma',
  'Contract Law',
  'Welding',
  'Copywriting',
];
const GROUPS = [
  'Engineering',
  'Sales EMEA',
  'Support Tier 2',
  'Warehouse Night Shift',
  'Leadership',
  'Contractors',
  'Finance',
  'Design Guild',
  'Berlin Office',
  'New Hires',
];

const PEOPLE_COUNT = 200;
const ID_PREFIX: Readonly<Record<ObjectLog, string>> = { career: 'car_', skill: 'skl_' };

/**
 * The simulated company: its careers and skills (the per-object logs), and the people and
 * identity-provider groups that activity entries refer to. Generated from the seed alone, so two
 * simulators with the same seed share ids and a consumer's fixtures stay valid across runs.
 */
export class CompanyDirectory {
  readonly people: readonly NamedRef[];
  readonly groups: readonly NamedRef[];
  private readonly objects: Record<ObjectLog, Map<string, DirectoryObject>> = { career: new Map(), skill: new Map() };
  private readonly addedIds: Random;
  /** Snapshot arrays for random picks; rebuilt only when objects are added or deleted. */
  private readonly snapshots: Partial<Record<ObjectLog, DirectoryObject[]>> = {};

  constructor(seed: CompanySeed, counts: Readonly<Record<ObjectLog, number>>, createdBefore: number) {
    const random = Random.derive(seed, 'directory');
    this.addedIds = Random.derive(seed, 'directory', 'added');
    const people: NamedRef[] = [];
    for (let i = 0; i < PEOPLE_COUNT; i++) {
      people.push({ id: `per_${random.string(10)}`, name: `${random.pick(FIRST_NAMES)} ${random.pick(LAST_NAMES)}` });
    }
    this.people = people;
    this.groups = GROUPS.map((name) => ({ id: `grp_${random.string(10)}`, name }));
    for (const log of ['career', 'skill'] as const) {
      for (let i = 0; i < counts[log]; i++) {
        // Created some time in the year before history starts, so createdAt never postdates activity.
        const createdAt = createdBefore - random.int(1, 365 * 24 * 60) * 60_000;
        this.insert(log, `${ID_PREFIX[log]}${random.string(10)}`, this.nameFor(log, i), createdAt);
      }
    }
  }

  /** Live objects of a log, in creation order. */
  list(log: ObjectLog): readonly DirectoryObject[] {
    let snapshot = this.snapshots[log];
    if (!snapshot) {
      snapshot = [...this.objects[log].values()];
      this.snapshots[log] = snapshot;
    }
    return snapshot;
  }

  get(log: ObjectLog, id: string): DirectoryObject | undefined {
    return this.objects[log].get(id);
  }

  ids(log: ObjectLog): string[] {
    return [...this.objects[log].keys()];
  }

  has(log: ObjectLog, id: string): boolean {
    return this.objects[log].has(id);
  }

  add(log: ObjectLog, id: string | undefined, now: number): string {
    const objectId = id ?? `${ID_PREFIX[log]}${this.addedIds.string(10)}`;
    if (this.objects[log].has(objectId)) throw new Error(`${log} '${objectId}' already exists`);
    this.insert(log, objectId, this.nameFor(log, this.objects[log].size), now);
    return objectId;
  }

  delete(log: ObjectLog, id: string): void {
    if (!this.objects[log].delete(id)) throw new Error(`${log} '${id}' does not exist`);
    delete this.snapshots[log];
  }

  private insert(log: ObjectLog, id: string, name: string, createdAt: number): void {
    this.objects[log].set(id, { id, name, createdAt: new Date(createdAt).toISOString() });
    delete this.snapshots[log];
  }

  private nameFor(log: ObjectLog, index: number): string {
    if (log === 'skill') {
      const round = Math.floor(index / SKILLS.length);
      const base = SKILLS[index % SKILLS.length] as string;
      return round === 0 ? base : `${base} ${round + 1}`;
    }
    const combos = SENIORITY.length * DISCIPLINES.length;
    const base = `${SENIORITY[index % SENIORITY.length]} ${DISCIPLINES[Math.floor(index / SENIORITY.length) % DISCIPLINES.length]}`;
    const round = Math.floor(index / combos);
    return round === 0 ? base : `${base} ${round + 1}`;
  }
}
