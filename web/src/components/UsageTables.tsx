import type { ReactNode } from 'react';
import type { UsageDaily } from '../api/types';
import { formatCount } from '../lib/format';
import { formatUsd } from '../lib/money';

type ModelRow = UsageDaily['byModel'][number];
type KeyRow = UsageDaily['byKey'][number];
type ProjectRow = UsageDaily['byProject'][number];

interface Column<Row> {
  label: string;
  value(row: Row): string;
}

const requests = { label: 'Requests', value: (row: { requests: number }) => formatCount(row.requests) };
const input = { label: 'Input', value: (row: { inputTokens: number }) => formatCount(row.inputTokens) };
const output = { label: 'Output', value: (row: { outputTokens: number }) => formatCount(row.outputTokens) };
const cost = { label: 'Cost', value: (row: { costUsd: string }) => formatUsd(row.costUsd) };
/** Reported usage no free allowance, balance or key limit could pay: tokens, and their cost at list price. */
const unbilled = {
  label: 'Unbilled',
  value: (row: { unbilledTokens: number; unbilledUsd: string }) =>
    row.unbilledTokens === 0 ? '0' : `${formatCount(row.unbilledTokens)} (${formatUsd(row.unbilledUsd)})`,
};
const cached = { label: 'Cached', value: (row: ModelRow) => formatCount(row.cacheReadTokens + row.cacheWriteTokens) };

/** One breakdown table: a row header naming the group, then numeric columns (stacked on a phone). */
function BreakdownTable<Row>(props: {
  caption: string;
  groupLabel: string;
  rows: Row[];
  rowKey(row: Row): string;
  rowHeader(row: Row): ReactNode;
  /** Extra class of the row header cell. */
  headerClass?: string;
  columns: Column<Row>[];
}) {
  if (props.rows.length === 0) return <p className="muted">No requests in this range.</p>;
  return (
    <div className="table-wrap" tabIndex={0} role="region" aria-label={`${props.caption}, scrollable`}>
      <table className="table table-stack">
        <caption className="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">{props.groupLabel}</th>
            {props.columns.map((column) => (
              <th key={column.label} scope="col" className="num">
                {column.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={props.rowKey(row)}>
              <th scope="row" className={props.headerClass}>
                {props.rowHeader(row)}
              </th>
              {props.columns.map((column) => (
                <td key={column.label} data-label={column.label} className="num">
                  {column.value(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function ModelBreakdown({ rows }: { rows: ModelRow[] }) {
  return (
    <BreakdownTable<ModelRow>
      caption="Usage by model"
      groupLabel="Model"
      rows={rows}
      rowKey={(row) => row.model}
      rowHeader={(row) => row.model}
      headerClass="nowrap"
      columns={[requests, input, output, cached, cost, unbilled]}
    />
  );
}

export function KeyBreakdown({ rows }: { rows: KeyRow[] }) {
  return (
    <BreakdownTable<KeyRow>
      caption="Usage by key"
      groupLabel="Key"
      rows={rows}
      rowKey={(row) => row.keyId}
      rowHeader={(row) => (
        <>
          {row.keyName} <code className="hint">{row.hint}</code>
        </>
      )}
      columns={[requests, input, output, cost, unbilled]}
    />
  );
}

export function ProjectBreakdown({ rows }: { rows: ProjectRow[] }) {
  return (
    <BreakdownTable<ProjectRow>
      caption="Usage by project"
      groupLabel="Project"
      rows={rows}
      rowKey={(row) => row.projectId}
      rowHeader={(row) => row.projectName ?? row.projectId}
      columns={[requests, input, output, cost, unbilled]}
    />
  );
}
