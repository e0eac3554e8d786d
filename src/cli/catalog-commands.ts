import { userInfo } from 'node:os';
import type { CatalogEditor } from '../config/catalog-editor.js';
import { CATALOG_ENTRY_KINDS, type CatalogEntryKind } from '../storage/catalog-entry-types.js';
import { UsageError } from './usage-error.js';

/** `catalog list | set | retire | delete | history`: the operator's stored catalog edits (docs/configuration.md). */
export const CATALOG_USAGE = `  catalog list                                   the stored catalog entries and the revision
  catalog set --kind model|alias|deployment --id ID --entry JSON
                                                 add or replace a stored entry (as tollgate.yaml holds it;
                                                 a deployment names its key's variable: "apiKeyEnv")
  catalog retire --id MODEL [--replacement ID]   refuse new requests for the model, naming the replacement
  catalog delete --kind alias|deployment|model --id ID
                                                 delete a stored entry (tollgate.yaml's applies again)
  catalog history [--limit N]                    the latest changes, newest first
`;

export interface CatalogCommandValues {
  kind?: string | undefined;
  id?: string | undefined;
  entry?: string | undefined;
  replacement?: string | undefined;
  limit?: string | undefined;
}

export function isCatalogCommand(command: string): boolean {
  return ['catalog list', 'catalog set', 'catalog retire', 'catalog delete', 'catalog history'].includes(command);
}

/** Who the history names for a CLI change: the operating-system user running it. */
function cliActor(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

export async function runCatalogCommand(
  command: string,
  editor: CatalogEditor,
  values: CatalogCommandValues,
): Promise<{ data: unknown; text: string }> {
  if (command === 'catalog list') {
    const snapshot = await editor.snapshot();
    const lines = snapshot.entries.map(
      (entry) => `${entry.kind} ${entry.id}  ${JSON.stringify(entry.document)}  (revision ${entry.revision})`,
    );
    return { data: snapshot, text: [`Revision ${snapshot.revision}.`, ...lines].join('\n') };
  }
  if (command === 'catalog history') {
    const limit = values.limit === undefined ? 20 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError('--limit must be a whole number above 0.');
    const changes = await editor.history(limit);
    const lines = changes.map(
      (change) =>
        `${change.revision}  ${new Date(change.changedAt).toISOString()}  ${change.changedBy}  ${change.action} ${change.kind} ${change.entryId}`,
    );
    return { data: changes, text: lines.join('\n') || 'No changes.' };
  }
  const id = required(values.id, 'id');
  if (command === 'catalog retire') {
    const snapshot = await editor.retire(id, values.replacement, cliActor());
    const instead = values.replacement === undefined ? '' : `, replaced by ${values.replacement}`;
    return { data: snapshot, text: `Retired ${id}${instead} (revision ${snapshot.revision}).` };
  }
  const kind = kindOf(required(values.kind, 'kind'));
  if (command === 'catalog delete') {
    const snapshot = await editor.remove(kind, id, cliActor());
    return { data: snapshot, text: `Deleted the stored ${kind} ${id} (revision ${snapshot.revision}).` };
  }
  let document: unknown;
  try {
    document = JSON.parse(required(values.entry, 'entry'));
  } catch {
    throw new UsageError('--entry must be the entry as JSON, e.g. \'{"model": "alpha-sonnet-5"}\'.');
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document))
    throw new UsageError('--entry must be a JSON object.');
  const snapshot = await editor.put(kind, id, document as Record<string, unknown>, cliActor());
  return { data: snapshot, text: `Stored ${kind} ${id} (revision ${snapshot.revision}).` };
}

function kindOf(value: string): CatalogEntryKind {
  const kind = CATALOG_ENTRY_KINDS.find((candidate) => candidate === value);
  if (kind === undefined) throw new UsageError(`--kind must be one of ${CATALOG_ENTRY_KINDS.join(', ')}.`);
  return kind;
}

function required(value: string | undefined, name: string): string {
  if (value === undefined || value === '') throw new UsageError(`--${name} is required.`);
  return value;
}
