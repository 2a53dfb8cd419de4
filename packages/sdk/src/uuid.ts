/**
 * UUIDv7 ids, generated from core (generated/uuid.ts); this module is the
 * path testing.ts imports them by.
 */
export { isUuidv7, uuidv7 } from './generated/uuid.ts';
