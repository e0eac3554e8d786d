import {
  CatalogRevisionConflict,
  type CatalogChangeAction,
  type CatalogEntryKind,
  type CatalogEntryRecord,
  type CatalogEntryRepository,
  type CatalogRevisionRecord,
  type CatalogSnapshot,
} from '../storage/catalog-entry-types.js';
import { CatalogEntryError, checkEntry, entryName, withCatalogEntries } from './catalog-entries.js';
import type { Config } from './load-config.js';

type Document = Readonly<Record<string, unknown>>;
type Environment = Readonly<Record<string, string | undefined>>;

/** The catalog a configuration makes, checked in full and ready to apply. */
export interface CheckedCatalog {
  commit(): void;
}

export interface CatalogEditorOptions {
  repository: CatalogEntryRepository;
  /** The configuration as tollgate.yaml and the environment give it now (the file may have been reloaded). */
  fileConfig: () => Config;
  env: Environment;
  /** The ids of the models the gateway itself lists (they stand without any entry). */
  listedModels: ReadonlySet<string>;
  /** Builds and checks the whole catalog of `config`, changing nothing; throws naming the entry at fault. */
  check: (config: Config) => CheckedCatalog;
  /** The change is stored as `snapshot.revision`: the editing instance applies it at once. */
  applied?: (snapshot: CatalogSnapshot, checked: CheckedCatalog) => void;
  now: () => number;
}

/** The stored entry, or the entry's name is not one the operator stored. */
export class CatalogEntryNotFound extends Error {
  constructor(
    readonly kind: CatalogEntryKind,
    readonly id: string,
    detail: string,
  ) {
    super(`${entryName(kind, id)}: ${detail}`);
    this.name = 'CatalogEntryNotFound';
  }
}

/** Attempts at a change when other changes keep landing between its check and its write. */
const ATTEMPTS = 3;

/**
 * The operator's edits of the catalog (operator view, API, CLI): each change is checked against the whole catalog
 * it would make (the built-in models, tollgate.yaml, the other stored entries) by the rules the file is, stored
 * only when it passes, and written as the next revision, which every instance picks up.
 */
export class CatalogEditor {
  constructor(private readonly options: CatalogEditorOptions) {}

  /** The configuration tollgate.yaml and the environment give now (what stored entries are laid over). */
  fileConfig(): Config {
    return this.options.fileConfig();
  }

  snapshot(): Promise<CatalogSnapshot> {
    return this.options.repository.snapshot();
  }

  history(limit: number): Promise<CatalogRevisionRecord[]> {
    return this.options.repository.history(limit);
  }

  /** Adds or replaces a stored entry (a model's replaces tollgate.yaml's of the same id whole). */
  async put(kind: CatalogEntryKind, id: string, document: Document, actor: string): Promise<CatalogSnapshot> {
    checkEntry(kind, id, document);
    return this.change(kind, id, 'put', actor, () => document);
  }

  /** New requests for the model get a 400 naming `replacement`; usage history keeps it and its prices. */
  retire(id: string, replacement: string | undefined, actor: string): Promise<CatalogSnapshot> {
    return this.change('model', id, 'retire', actor, (current) => {
      if (current === undefined) throw new CatalogEntryNotFound('model', id, 'is not in the catalog');
      const { replacement: _previous, ...rest } = current ?? {};
      return { ...rest, retired: true, ...(replacement === undefined ? {} : { replacement }) };
    });
  }

  /** Clears a model's or an alias's fallback chain (stored as an edit of the entry). */
  removeChain(kind: 'model' | 'alias', id: string, actor: string): Promise<CatalogSnapshot> {
    return this.change(kind, id, 'put', actor, (current) => {
      if (current === undefined) throw new CatalogEntryNotFound(kind, id, 'is not in the catalog');
      const { fallbacks: _fallbacks, fallback: _fallback, ...rest } = current;
      return rest;
    });
  }

  /**
   * Deletes a stored entry: the file's entry of the same name, if any, applies again. A model only tollgate's
   * database knows is retired, never deleted: usage history is named and priced with it.
   */
  remove(kind: CatalogEntryKind, id: string, actor: string): Promise<CatalogSnapshot> {
    return this.change(kind, id, 'delete', actor, (_current, stored) => {
      if (stored === undefined)
        throw new CatalogEntryNotFound(kind, id, 'is not stored in the database (edit tollgate.yaml for its entries)');
      const known = this.options.listedModels.has(id) || this.options.fileConfig().models[id] !== undefined;
      if (kind === 'model' && !known)
        throw new CatalogEntryError(
          entryName(kind, id),
          'a model added here is retired, not deleted: usage history is named and priced with it',
        );
      return null;
    });
  }

  /**
   * Checks the catalog with the change applied, then writes it as the next revision; when another change landed
   * meanwhile, checks again against that one.
   */
  private async change(
    kind: CatalogEntryKind,
    id: string,
    action: CatalogChangeAction,
    actor: string,
    next: (current: Document | undefined, stored: Document | undefined) => Document | null,
  ): Promise<CatalogSnapshot> {
    for (let attempt = 1; ; attempt++) {
      const snapshot = await this.options.repository.snapshot();
      const file = this.options.fileConfig();
      const stored = snapshot.entries.find((entry) => entry.kind === kind && entry.id === id)?.document;
      const document = next(stored ?? this.fileDocument(file, kind, id), stored);
      const at = this.options.now();
      const others = snapshot.entries.filter((entry) => !(entry.kind === kind && entry.id === id));
      const entries: CatalogEntryRecord[] =
        document === null
          ? others
          : [...others, { kind, id, document, revision: snapshot.revision + 1, updatedBy: actor, updatedAt: at }];
      let checked: CheckedCatalog;
      try {
        checked = this.options.check(withCatalogEntries(file, entries, this.options.env));
      } catch (error) {
        throw CatalogEntryError.from(error);
      }
      try {
        const revision = await this.options.repository.write(snapshot.revision, {
          kind,
          id,
          action,
          document,
          changedBy: actor,
          at,
        });
        const applied = { revision, entries };
        this.options.applied?.(applied, checked);
        return applied;
      } catch (error) {
        if (!(error instanceof CatalogRevisionConflict) || attempt >= ATTEMPTS) throw error;
      }
    }
  }

  /** The entry tollgate.yaml gives, in a stored entry's shape (what an edit starts from when none is stored). */
  private fileDocument(config: Config, kind: CatalogEntryKind, id: string): Document | undefined {
    if (kind === 'model') return config.models[id] ?? (this.options.listedModels.has(id) ? {} : undefined);
    if (kind === 'alias') {
      const alias = config.aliases[id];
      return alias === undefined
        ? undefined
        : { model: alias.model, ...(alias.fallbacks === undefined ? {} : { fallbacks: alias.fallbacks }) };
    }
    // A file deployment holds keys, not their variables' names: it cannot be the start of a stored one.
    return undefined;
  }
}
