/**
 * The `mongodb` driver, loaded at run time: `mongodb` is an optional peer dependency of tsbuckets (an
 * embedded-only user does not install it), so `tsbuckets/mongodb` must not fail with a bare "Cannot find
 * package 'mongodb'" when it is missing. This module loads the driver once, when `tsbuckets/mongodb` is
 * imported, and turns a missing driver into an error that says what to install.
 *
 * Only the driver's error classes are needed as values (to recognise driver errors); everything else in
 * `src/mongodb/` uses the driver's types only, which cost nothing at run time.
 *
 * @packageDocumentation
 */
import { createRequire } from 'node:module';
import type * as Mongo from 'mongodb';

import { TsBucketsError } from '../errors.js';

/** The parts of the driver that tsbuckets uses at run time. */
export type MongoDriver = Pick<
  typeof Mongo,
  | 'MongoError'
  | 'MongoNetworkError'
  | 'MongoNetworkTimeoutError'
  | 'MongoServerSelectionError'
  | 'MongoTopologyClosedError'
>;

/** Loads a package by name (Node's `require`, or a test's stand-in). */
export type ModuleLoader = (id: string) => unknown;

/** The message of the error thrown when the driver is not installed. */
export const kMongoDriverMissingMessage: string =
  "tsbuckets/mongodb needs the 'mongodb' package (the official MongoDB driver), an optional peer " +
  'dependency of tsbuckets that is not installed: run `npm install mongodb`. The embedded engine ' +
  "(import from 'tsbuckets') does not need it.";

function isMissingDriver(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  // Only the driver itself missing: a package missing *inside* the driver is another problem.
  return (
    (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && error.message.includes("'mongodb'")
  );
}

/**
 * Load the driver.
 *
 * @param load - loads a package by name; by default Node's `require`, resolved from this package (so the
 *   application's `mongodb` is found).
 * @returns the driver's error classes.
 * @throws {@link TsBucketsError} with {@link kMongoDriverMissingMessage} when `mongodb` is not installed,
 *   or naming the failure (with the loader's error as `cause`) when it is installed but does not load.
 */
export function loadMongoDriver(load: ModuleLoader = createRequire(import.meta.url)): MongoDriver {
  let driver: unknown;
  try {
    driver = load('mongodb');
  } catch (error) {
    if (isMissingDriver(error)) throw new TsBucketsError(kMongoDriverMissingMessage, { cause: error });
    const reason = error instanceof Error ? error.message : String(error);
    throw new TsBucketsError(`tsbuckets/mongodb could not load the 'mongodb' package: ${reason}`, {
      cause: error,
    });
  }
  const classes = driver as Partial<MongoDriver> | null;
  if (typeof classes?.MongoError !== 'function') {
    throw new TsBucketsError(
      "tsbuckets/mongodb could not load the 'mongodb' package: it has no MongoError class (not the official driver?)",
    );
  }
  return driver as MongoDriver;
}

/** The driver, loaded when `tsbuckets/mongodb` is imported. */
export const driver: MongoDriver = loadMongoDriver();
