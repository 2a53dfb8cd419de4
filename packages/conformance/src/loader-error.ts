/** Configuration problem: unreadable path, invalid JSON or a field of the wrong type. */
export class SuiteLoadError extends Error {
  override name = 'SuiteLoadError';
}
