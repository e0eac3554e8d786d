import { models } from '../api/endpoints';
import type { ModelInfo } from '../api/types';
import { ErrorNotice, Loading } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { formatCount } from '../lib/format';
import { formatUsd } from '../lib/money';
import { useAsync } from '../lib/use-async';

const CAPABILITY_WORDS: ReadonlyArray<[keyof ModelInfo['capabilities'], string]> = [
  ['tools', 'Tools'],
  ['images', 'Images'],
  ['reasoning', 'Reasoning'],
  ['structuredOutput', 'Structured output'],
];

/** Every model the account may use, with its limits, exact prices per 1M tokens and what it can do. */
export function ModelsPage() {
  const { data, error, loading } = useAsync(models, []);
  return (
    <>
      <PageHeader
        title="Models"
        description="Prices in USD per 1 million tokens, exactly what a request is billed. Cache writes last 5 minutes or 1 hour."
      />
      <ErrorNotice error={error} />
      {loading && data === undefined && <Loading />}
      {data !== undefined && (
        <section className="card section" aria-labelledby="models-heading">
          <h2 id="models-heading" className="visually-hidden">
            Models and prices
          </h2>
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Models and prices, scrollable">
            <table className="table table-stack models-table">
              <caption className="visually-hidden">Models, limits and prices per 1M tokens</caption>
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  <th scope="col" className="num">
                    Context
                  </th>
                  <th scope="col" className="num">
                    Max output
                  </th>
                  <th scope="col" className="num">
                    Input
                  </th>
                  <th scope="col" className="num">
                    Output
                  </th>
                  <th scope="col" className="num">
                    Cache read
                  </th>
                  <th scope="col" className="num">
                    Cache write 5 min / 1 h
                  </th>
                  <th scope="col">Can do</th>
                </tr>
              </thead>
              <tbody>
                {data.models.map((model) => (
                  <tr key={model.id}>
                    <th scope="row">
                      <code className="model-id">{model.id}</code>
                      <span className="muted small model-description">
                        {model.family} · {model.description}
                      </span>
                    </th>
                    <td data-label="Context" className="num">
                      {formatCount(model.contextWindow)}
                    </td>
                    <td data-label="Max output" className="num">
                      {formatCount(model.maxOutputTokens)}
                    </td>
                    <td data-label="Input" className="num">
                      {formatUsd(model.pricing.inputUsd)}
                    </td>
                    <td data-label="Output" className="num">
                      {formatUsd(model.pricing.outputUsd)}
                    </td>
                    <td data-label="Cache read" className="num">
                      {formatUsd(model.pricing.cacheReadUsd)}
                    </td>
                    <td data-label="Cache write" className="num">
                      {formatUsd(model.pricing.cacheWriteUsd)} / {formatUsd(model.pricing.cacheWrite1hUsd)}
                    </td>
                    <td data-label="Can do">
                      <ul className="capability-list" aria-label={`What ${model.id} can do`}>
                        {CAPABILITY_WORDS.filter(([flag]) => model.capabilities[flag]).map(([flag, word]) => (
                          <li key={flag} className="badge badge-blue">
                            {word}
                          </li>
                        ))}
                      </ul>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p className="muted small">
            Web search, where a model offers it, is billed per search on top of tokens:{' '}
            {data.models
              .filter((model) => model.pricing.webSearchUsd !== null)
              .map((model) => `${model.id} ${formatUsd(model.pricing.webSearchUsd!)}`)
              .join(', ')}
            . The same list, with prices, is at <code>GET /v1/models</code> for any API key.
          </p>
        </section>
      )}
    </>
  );
}
