import { ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { bucketIdBound, bucketIdSeconds, BucketIdGenerator } from '../../../src/bucket-format/bucket-oid.js';

describe('BucketIdGenerator', () => {
  it('puts the rounded start in seconds into the 4 timestamp bytes (docs/mongodb-behaviour.md §1.2 example)', () => {
    const gen = new BucketIdGenerator(new Uint8Array(8));
    const id = gen.next(Date.parse('2024-10-04T10:14:00Z'));
    expect(id.toHexString().slice(0, 8)).toBe('66ffbfe8');
    expect(id.getTimestamp().toISOString()).toBe('2024-10-04T10:14:00.000Z');
  });

  it('fills bytes 4..11 with a 64-bit big-endian counter incremented per id', () => {
    const gen = new BucketIdGenerator(Uint8Array.from([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe]));
    expect(gen.next(0).toHexString()).toBe('00000000' + '00000000fffffffe');
    expect(gen.next(0).toHexString()).toBe('00000000' + '00000000ffffffff');
    // carry into the high word
    expect(gen.next(0).toHexString()).toBe('00000000' + '0000000100000000');
  });

  it('gives each id bytes of its own: an id kept keeps its value while more are made', () => {
    // Arrange
    const gen = new BucketIdGenerator(Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]));
    // Act
    const first = gen.next(Date.parse('2024-10-04T10:14:00Z'));
    const second = gen.next(0);
    const firstBytes = Buffer.from(first.id).toString('hex');
    gen.next(-60_000);
    // Assert
    expect(first.toHexString()).toBe('66ffbfe80102030405060708');
    expect(firstBytes).toBe('66ffbfe80102030405060708');
    expect(second.toHexString()).toBe('000000000102030405060709');
  });

  it('wraps the 64-bit counter', () => {
    const gen = new BucketIdGenerator(new Uint8Array(8).fill(0xff));
    expect(gen.next(0).toHexString()).toBe('00000000ffffffffffffffff');
    expect(gen.next(0).toHexString()).toBe('000000000000000000000000');
  });

  it('wraps pre-1970 and post-2106 seconds modulo 2^32', () => {
    expect(bucketIdSeconds(-60_000)).toBe(2 ** 32 - 60);
    expect(bucketIdSeconds(2 ** 32 * 1000 + 5000)).toBe(5);
    const gen = new BucketIdGenerator(new Uint8Array(8));
    expect(gen.next(-60_000).toHexString().slice(0, 8)).toBe('ffffffc4');
  });

  it('seeds at random by default: two generators differ', () => {
    const a = new BucketIdGenerator().next(0);
    const b = new BucketIdGenerator().next(0);
    expect(a.equals(b)).toBe(false);
    expect(a).toBeInstanceOf(ObjectId);
  });

  it('reseed changes the counter', () => {
    const gen = new BucketIdGenerator(new Uint8Array(8));
    gen.reseed();
    expect(gen.next(0).toHexString()).not.toBe('000000000000000000000000');
  });
});

describe('bucketIdBound', () => {
  it('builds all-zero and all-0xff bounds', () => {
    expect(bucketIdBound(0x66ffbfe8, 'min').toHexString()).toBe('66ffbfe80000000000000000');
    expect(bucketIdBound(0x66ffbfe8, 'max').toHexString()).toBe('66ffbfe8ffffffffffffffff');
  });
});
