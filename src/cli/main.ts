#!/usr/bin/env node
/**
 * Entry point of the `tsbuckets` command (package `bin`): runs {@link main} on the process's arguments
 * and streams.
 *
 * @packageDocumentation
 */
import { processIo } from './io.js';
import { main } from './program.js';

process.exitCode = await main(process.argv, processIo());
