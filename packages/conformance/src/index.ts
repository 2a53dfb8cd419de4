/** Public API of the OJS conformance runner for the official JSON test format. */
export { checkBody, checkHeaders, checkStatus, headerValue } from './assertions.ts';
export { type CliIo, type CliOptions, conformanceMain, parseCliArgs, USAGE } from './cli.ts';
export { goFloat, goValue, templateText } from './gofmt.ts';
export { HttpClient, type HttpRequest, type HttpResponse, TimeoutError } from './http.ts';
export { parsePath, type Resolution, resolvePath } from './jsonpath.ts';
export {
  loadSuites,
  parseLevel,
  parseTestCase,
  SuiteLoadError,
  selectTests,
  type TestFilter,
} from './loader.ts';
export { type Mismatch, matchResolution, matchValue } from './matchers.ts';
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
export { groupSteps, OJS_MEDIA_TYPE, type RunOptions, runTest, runTests } from './runner.ts';
export { lookupTemplate, resolveDeep, resolveTemplates, type StepBodies } from './templates.ts';
export * from './types.ts';
