/**
 * Freed memory kept for reuse in a one-shot pass (`analyze`, `compare`). glibc hands freed heap
 * back to the kernel once more than its trim threshold is free at the top (128 KiB at first) and
 * serves blocks past its mmap threshold from fresh mappings, and every page given back is faulted
 * in again at its next use: `analyze` of a 30,000-row W&B file made 36,000-40,000 page faults,
 * about 10 µs each on the machines we measure, a third of its time. Freeing one mapped block
 * raises both thresholds to its size (glibc's dynamic threshold, up to 32 MiB; the trim threshold
 * to twice that), as MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ would, which glibc reads
 * only before the process starts. The block is never touched (a fresh mapping is zero, so calloc
 * does not write it) and is freed at the first collection. Other allocators ignore it.
 * BENCHMARKS.md, session 30: 27,000 faults, 9-11% faster. Not for the daemon: it would keep up to
 * 62 MiB of freed heap for its life.
 */
export function keepFreedMemory(): void {
  // Just under 32 MiB: a chunk of more than that leaves the thresholds where they are.
  void new ArrayBuffer(31 * 1024 * 1024);
}
