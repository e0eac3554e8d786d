/**
 * The gateway's layering, checked by `npm run check` (docs/layering.md explains the layers).
 *
 * Each folder of src/ names the folders it may import; a folder not in its list is an upward import. Tests are
 * not cruised: a test may drive code through the layers above it (the storage contract tests go through billing
 * and the Responses store), and nothing imports a test, so it cannot close a cycle in the code that ships.
 */

/** src/<folder> → the other src/ folders it may import. Files directly in src/ are the composition root. */
const MAY_IMPORT = {
  // The gateway's own model of a request and a reply: every other layer speaks it, it speaks none of them.
  canonical: [],
  ids: [],
  // JSON shapes of the vendor and client wire formats, shared by protocols/, providers/ and simulator/.
  wire: [],
  streaming: ['canonical'],
  observability: ['canonical'],
  ratelimit: ['canonical', 'ids', 'observability'],
  // Persistence: record types and repositories, under every service that keeps state.
  storage: ['canonical', 'ids'],
  keys: ['canonical', 'ids', 'storage'],
  accounts: ['canonical', 'ids', 'keys', 'storage'],
  billing: ['canonical', 'ids', 'keys', 'observability', 'ratelimit', 'storage'],
  // Over the accounts layer: mail, verified email, reset links, sessions list, account deletion, second factors,
  // passkeys and single sign-on.
  identity: ['accounts', 'canonical', 'config', 'ids', 'keys', 'storage'],
  catalog: ['canonical', 'billing'],
  // Vendor adapters: canonical in, vendor HTTP out. They know nothing of clients.
  providers: ['canonical', 'catalog', 'observability', 'streaming', 'wire'],
  pipeline: ['billing', 'canonical', 'catalog', 'keys', 'observability', 'providers', 'storage', 'streaming'],
  // Client protocols: client JSON to canonical and back. They know nothing of vendors.
  protocols: ['billing', 'canonical', 'catalog', 'ids', 'keys', 'pipeline', 'storage', 'streaming', 'wire'],
  config: ['canonical', 'providers', 'ratelimit', 'storage', 'telemetry'],
  // The HTTP surface: hooks, error shapes, account and key APIs, the dashboard.
  http: [
    'accounts',
    'alerts',
    'identity',
    'billing',
    'canonical',
    'catalog',
    'config',
    'identity',
    'ids',
    'keys',
    'observability',
    'protocols',
    'providers',
    'ratelimit',
    'storage',
    'telemetry',
  ],
  cli: ['accounts', 'billing', 'canonical', 'config', 'http', 'identity', 'keys', 'storage'],
  // OpenTelemetry: implements the pipeline's and the providers' trace interfaces; only the entry points import it.
  // Outbound webhooks and the usage export's sinks: read settled usage from storage, never on the request path.
  telemetry: ['billing', 'canonical', 'catalog', 'ids', 'keys', 'observability', 'pipeline', 'providers', 'storage'],
  // Budget alerts: evaluate rules off the request path, send their mail and signed webhooks from a persisted queue.
  alerts: ['billing', 'canonical', 'identity', 'ids', 'storage', 'telemetry'],
  // A stand-in for the vendors: it shares their wire formats, never the gateway's adapters or protocols.
  simulator: ['canonical', 'streaming', 'wire'],
};

const layering = Object.entries(MAY_IMPORT).map(([folder, allowed]) => ({
  name: `layer-${folder}`,
  comment: `src/${folder}/ may import ${allowed.length === 0 ? 'no other folder of src/' : `only src/{${allowed.join(',')}}/`}.`,
  severity: 'error',
  from: { path: `^src/${folder}/` },
  to: { path: '^src/', pathNot: `^src/(${[folder, ...allowed].join('|')})/` },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-folder-cycles',
      comment: 'Two folders that import each other are one layer in two places: move the shared part down.',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-runtime-cycles',
      comment: 'Modules that import each other at run time load half-initialised; type-only cycles are harmless.',
      severity: 'error',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'no-composition-root-from-folders',
      comment: 'app.ts, gateway.ts and the CLI entry points wire the folders together; no folder imports them.',
      severity: 'error',
      from: { path: '^src/[^/]+/' },
      to: { path: '^src/[^/]+[.]ts$' },
    },
    {
      name: 'src-not-to-test-or-bench',
      comment: 'The shipped code never imports test helpers or benchmarks.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'folders-are-known',
      comment: 'A new folder of src/ gets its line in MAY_IMPORT, so its place in the layering is decided.',
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: `^src/(${Object.keys(MAY_IMPORT).join('|')})/` },
      to: {},
    },
    ...layering,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['(^|/)node_modules/', '^dist/', '[.]test[.]ts$', '[.]test-child[.]ts$'] },
    tsConfig: { fileName: 'tsconfig.check.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.d.ts'],
    },
  },
};
