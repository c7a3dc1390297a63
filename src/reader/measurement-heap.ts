/**
 * A binary min-heap of measurements keyed by a number (the time in ms, negated for descending order),
 * ties broken by insertion order. Used by the time-ordered merge of buckets: measurements wait here until
 * no later bucket can hold an earlier one.
 *
 * Keys, sequence numbers and documents live in three parallel arrays so that a push allocates no entry
 * object per measurement.
 *
 * @packageDocumentation
 */
import type { MeasurementDocument } from './bucket-unpacker.js';

/** Heap state (plain data; use the functions below). */
export interface MeasurementHeap {
  /** Sort keys, heap-ordered together with `seqs` and `docs`. */
  readonly keys: number[];
  /** Insertion sequence numbers: equal keys pop in insertion order. */
  readonly seqs: number[];
  /** The measurements. */
  readonly docs: MeasurementDocument[];
  /** Next sequence number. */
  nextSeq: number;
}

/**
 * An empty heap.
 *
 * @returns the heap.
 */
export function makeMeasurementHeap(): MeasurementHeap {
  return { keys: [], seqs: [], docs: [], nextSeq: 0 };
}

function less(h: MeasurementHeap, i: number, j: number): boolean {
  const a = h.keys[i] as number;
  const b = h.keys[j] as number;
  return a < b || (a === b && (h.seqs[i] as number) < (h.seqs[j] as number));
}

function swap(h: MeasurementHeap, i: number, j: number): void {
  const k = h.keys[i] as number;
  h.keys[i] = h.keys[j] as number;
  h.keys[j] = k;
  const s = h.seqs[i] as number;
  h.seqs[i] = h.seqs[j] as number;
  h.seqs[j] = s;
  const d = h.docs[i] as MeasurementDocument;
  h.docs[i] = h.docs[j] as MeasurementDocument;
  h.docs[j] = d;
}

/**
 * Add a measurement.
 *
 * @param h - the heap.
 * @param key - its sort key.
 * @param doc - the measurement.
 */
export function heapPush(h: MeasurementHeap, key: number, doc: MeasurementDocument): void {
  let i = h.keys.length;
  h.keys.push(key);
  h.seqs.push(h.nextSeq++);
  h.docs.push(doc);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!less(h, i, parent)) break;
    swap(h, i, parent);
    i = parent;
  }
}

/**
 * The smallest key.
 *
 * @param h - the heap.
 * @returns the key, or `Infinity` when the heap is empty.
 */
export function heapPeekKey(h: MeasurementHeap): number {
  return h.keys.length === 0 ? Number.POSITIVE_INFINITY : (h.keys[0] as number);
}

/**
 * Remove and return the measurement with the smallest key (earliest inserted among equal keys).
 *
 * @param h - the heap.
 * @returns the measurement, or `undefined` when empty.
 */
export function heapPop(h: MeasurementHeap): MeasurementDocument | undefined {
  const n = h.keys.length;
  if (n === 0) return undefined;
  const top = h.docs[0];
  swap(h, 0, n - 1);
  h.keys.pop();
  h.seqs.pop();
  h.docs.pop();
  const size = n - 1;
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < size && less(h, l, m)) m = l;
    if (r < size && less(h, r, m)) m = r;
    if (m === i) break;
    swap(h, i, m);
    i = m;
  }
  return top;
}
