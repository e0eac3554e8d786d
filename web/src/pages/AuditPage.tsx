import { useState, type FormEvent } from 'react';
import { audit } from '../api/endpoints';
import type { AuditEvent, AuditFilter } from '../api/types';
import { DateTime } from '../components/DateTime';
import { ErrorNotice, Loading } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { Pager } from '../components/Pager';
import { AUDIT_ACTION_CHOICES } from '../lib/audit-action-choices';
import { useCursorPages } from '../lib/use-cursor-pages';

const PAGE_SIZE = 50;

const ACTION_LABELS = new Map(AUDIT_ACTION_CHOICES.map((action) => [action.value, action.label]));

function actorText(event: AuditEvent): string {
  if (event.actor.type === 'system') return `System (${event.actor.id ?? 'gateway'})`;
  const who = event.actor.email ?? (event.actor.type === 'operator' ? 'Operator (command line)' : 'Unknown');
  const prefix = event.actor.type === 'operator' && event.actor.email !== null ? 'Operator ' : '';
  return `${prefix}${who}${event.actor.key_id === null ? '' : ` with key ${event.actor.key_id}`}`;
}

function changeText(value: unknown): string {
  return value === null || value === undefined ? '—' : JSON.stringify(value, null, 2);
}

/** The organisation's audit log: who changed keys, tiers, settings and money, with filters and exports. */
export function AuditPage() {
  const [draft, setDraft] = useState<AuditFilter>({});
  const [filter, setFilter] = useState<AuditFilter>({});
  const pages = useCursorPages((cursor) => audit.list(filter, PAGE_SIZE, cursor), [filter]);
  const { page } = pages;
  const events = page.data?.events ?? [];

  function apply(event: FormEvent) {
    event.preventDefault();
    pages.restart();
    setFilter({ ...draft });
  }

  const set = (field: keyof AuditFilter) => (value: string) =>
    setDraft((current) => ({ ...current, [field]: value.trim() === '' ? undefined : value }));

  return (
    <>
      <PageHeader
        title="Audit log"
        description="Every change to this organisation's keys, tier, settings and money: who, when, from where, and what changed."
        actions={
          <>
            <a className="button button-secondary" href={audit.exportUrl(filter, 'csv')} download>
              Export CSV
            </a>
            <a className="button button-secondary" href={audit.exportUrl(filter, 'json')} download>
              Export JSON
            </a>
          </>
        }
      />
      <form className="filters" aria-label="Filters" onSubmit={apply}>
        <div className="field">
          <label htmlFor="audit-action">Action</label>
          <select
            id="audit-action"
            className="input"
            value={draft.action ?? ''}
            onChange={(event) => set('action')(event.target.value)}
          >
            <option value="">All actions</option>
            {AUDIT_ACTION_CHOICES.map((action) => (
              <option key={action.value} value={action.value}>
                {action.label}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="audit-actor">Actor (email, or “operator”, “system”)</label>
          <input
            id="audit-actor"
            className="input"
            type="text"
            maxLength={254}
            value={draft.actor ?? ''}
            onChange={(event) => set('actor')(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="audit-from">From (UTC day)</label>
          <input
            id="audit-from"
            className="input"
            type="date"
            value={draft.from ?? ''}
            onChange={(event) => set('from')(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="audit-to">To (UTC day, included)</label>
          <input
            id="audit-to"
            className="input"
            type="date"
            value={draft.to ?? ''}
            onChange={(event) => set('to')(event.target.value)}
          />
        </div>
        <div className="field filters-submit">
          <button type="submit" className="button button-primary">
            Apply filters
          </button>
        </div>
      </form>
      <section className="card section" aria-labelledby="audit-heading">
        <h2 id="audit-heading">Events</h2>
        <ErrorNotice error={page.error} />
        {page.loading && page.data === undefined && <Loading />}
        {page.data !== undefined && events.length === 0 && <p className="muted">No events match.</p>}
        {events.length > 0 && (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Audit events, scrollable">
            <table className="table table-dense table-stack audit-table">
              <caption className="visually-hidden">Audit events, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Action</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Address</th>
                  <th scope="col">Target</th>
                  <th scope="col">Change</th>
                </tr>
              </thead>
              <tbody>
                {events.map((event) => (
                  <tr key={event.id}>
                    <td className="nowrap">
                      <DateTime epochMs={Date.parse(event.created_at)} />
                    </td>
                    <td data-label="Action">{ACTION_LABELS.get(event.action) ?? event.action}</td>
                    <td data-label="Actor" className="audit-wrap">
                      {actorText(event)}
                    </td>
                    <td data-label="Address" className="nowrap">
                      {event.ip ?? '—'}
                    </td>
                    <td data-label="Target" className="audit-wrap">
                      {event.target === null ? '—' : `${event.target.type} ${event.target.id ?? ''}`}
                    </td>
                    <td className="audit-change">
                      <details>
                        <summary>Before and after</summary>
                        <div className="audit-values">
                          <div>
                            <h3 className="small">Before</h3>
                            <pre>{changeText(event.before)}</pre>
                          </div>
                          <div>
                            <h3 className="small">After</h3>
                            <pre>{changeText(event.after)}</pre>
                          </div>
                        </div>
                      </details>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <Pager label="Audit log" pages={pages} />
      </section>
    </>
  );
}
