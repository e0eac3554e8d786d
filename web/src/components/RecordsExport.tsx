import { useId, useState } from 'react';
import { exportDaysProblem, type ExportDays, type ExportFormat } from '../lib/export-days';
import { dayText } from '../lib/usage-query';

const DAY_MS = 86_400_000;

/**
 * A download of every record of the days chosen (UTC, both included) as CSV or JSON, for any range: the export
 * routes stream their records in pages, so a year of requests is one link.
 */
export function RecordsExport({
  what,
  urlOf,
}: {
  /** What the records are, for the link's name ("requests", "transactions"). */
  what: string;
  urlOf: (days: ExportDays, format: ExportFormat) => string;
}) {
  const ids = useId();
  const today = Math.floor(Date.now() / DAY_MS);
  const [days, setDays] = useState<ExportDays>({ from: dayText(today - 29), through: dayText(today) });
  const [format, setFormat] = useState<ExportFormat>('csv');
  const problem = exportDaysProblem(days);
  return (
    <div className="filters records-export">
      <div className="field">
        <label htmlFor={`${ids}-from`}>First day</label>
        <input
          id={`${ids}-from`}
          className="input"
          type="date"
          value={days.from}
          aria-invalid={problem !== undefined}
          aria-describedby={problem === undefined ? undefined : `${ids}-problem`}
          onChange={(event) => setDays({ ...days, from: event.target.value })}
        />
      </div>
      <div className="field">
        <label htmlFor={`${ids}-through`}>Last day</label>
        <input
          id={`${ids}-through`}
          className="input"
          type="date"
          value={days.through}
          aria-invalid={problem !== undefined}
          aria-describedby={problem === undefined ? undefined : `${ids}-problem`}
          onChange={(event) => setDays({ ...days, through: event.target.value })}
        />
      </div>
      <div className="field">
        <label htmlFor={`${ids}-format`}>Format</label>
        <select
          id={`${ids}-format`}
          className="input"
          value={format}
          onChange={(event) => setFormat(event.target.value as ExportFormat)}
        >
          <option value="csv">CSV</option>
          <option value="json">JSON (one record per line)</option>
        </select>
      </div>
      {problem === undefined ? (
        <a className="button button-secondary filters-submit" href={urlOf(days, format)} download>
          Download {what}
        </a>
      ) : (
        <p id={`${ids}-problem`} className="field-error filters-submit" role="alert">
          {problem}
        </p>
      )}
    </div>
  );
}
