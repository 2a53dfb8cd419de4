/** Public API of the OJS conformance toolkit: both test formats, reports, badge, manifest, validate. */
export { checkBody, checkExpect, checkHeaders, checkStatus, headerValue } from './assertions.ts';
export {
  BADGE_LINK,
  type BadgeInfo,
  badgeFiles,
  badgeFor,
  markdownSnippet,
  renderSvg,
  shieldsJson,
  shieldsUrl,
  verifiedLevel,
} from './badge.ts';
export {
  type CliIo,
  type CliOptions,
  conformanceMain,
  type OutputFormat,
  parseCliArgs,
  USAGE,
} from './cli.ts';
export {
  DEFAULT_TOLERANCE,
  describeTiming,
  formatMs,
  parseDurationMs,
  parseTiming,
  type Timing,
  timingMatches,
} from './durations.ts';
export { failureReason, reasonOf } from './explain.ts';
export { goFloat, goValue, templateText } from './gofmt.ts';
export { HttpClient, type HttpRequest, type HttpResponse, TimeoutError } from './http.ts';
export { parsePath, type Resolution, resolvePath } from './jsonpath.ts';
export { renderJunit } from './junit.ts';
export {
  BUNDLED_SUITES,
  type LoadedSuites,
  loadSuites,
  loadSuitesWithInfo,
  officialPlan,
  officialRunStep,
  parseLevel,
  parseTestCase,
  SuiteLoadError,
  selectTests,
  type TestFilter,
  withRequirements,
} from './loader.ts';
export {
  checkManifestDocument,
  compareLevels,
  fetchManifest,
  formatManifestCheck,
  type LevelComparison,
  type LevelVerdict,
  type ManifestCheck,
  type ManifestProblem,
  withComparison,
} from './manifest.ts';
export { type Mismatch, matchResolution, matchValue } from './matchers.ts';
export type { Block, TestPlan } from './plan.ts';
export {
  buildReport,
  type ConformanceReport,
  conformantLevel,
  formatSummaryLine,
  formatTestResult,
  formatVerdict,
  isConformant,
  type RunSummary,
  summarize,
} from './report.ts';
export {
  executeSeedStep,
  groupSteps,
  OJS_MEDIA_TYPE,
  type RunOptions,
  runSeedTest,
  runTest,
  runTests,
  type SeedRunOptions,
} from './runner.ts';
export {
  detectFormat,
  parseSeedTest,
  queuesIn,
  STANDARD_HANDLERS,
  type StandardHandler,
  seedPlan,
  seedRunStep,
} from './seed-loader.ts';
export { matchSeed } from './seed-matchers.ts';
export { resolveString, resolveText, resolveValue, timeTemplate } from './seed-templates.ts';
export {
  type Expectation,
  executeStep,
  type RunStep,
  runPhase,
  type StepOptions,
  type StepState,
} from './steps.ts';
export { lookupTemplate, resolveDeep, resolveTemplates, type StepBodies } from './templates.ts';
export * from './types.ts';
export {
  allowedNext,
  childPath,
  type DocumentKind,
  detectKind,
  type TransitionOptions,
  type ValidateOptions,
  type ValidationIssue,
  validateDocument,
  validateTransitions,
} from './validate.ts';
export {
  parseValidateArgs,
  VALIDATE_USAGE,
  type ValidateIo,
  validateMain,
} from './validate-cli.ts';
export {
  BuiltinWorker,
  decide,
  produceResult,
  slowDurationMs,
  type WorkerEvent,
  type WorkerOptions,
} from './worker.ts';
