/* patterns.c performs exactly the accesses of cachesim.Pattern.Run (see
 * engine/cachesim/pattern.go), for comparing the model with cachegrind:
 *
 *   patterns NAME SIZE STRIDE N PASSES DIM BLOCK PHASE
 *
 * PHASE 0 does only the setup (the chase's writes), PHASE 1 the setup and
 * the pattern: the difference of the two runs' counts is the pattern's.
 * The arrays start on a 2 MiB boundary, as PatternBase does, so the
 * cache-set index of every access equals the model's. Build with
 * -O2 -fno-tree-vectorize so that each 8-byte access is one instruction. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static uint64_t lcg(uint64_t x) { return x * 6364136223846793005ULL + 1442695040888963407ULL; }

static uint64_t scramble(uint64_t i, unsigned k) {
	uint64_t mask = (k == 64) ? ~0ULL : ((1ULL << k) - 1);
	unsigned h = k / 2 + 1;
	i = (i * 0x9e3779b97f4a7c15ULL) & mask;
	i ^= i >> h;
	i = (i * 0xbf58476d1ce4e5b9ULL) & mask;
	i ^= i >> h;
	return i;
}

static uint64_t mix64(uint64_t x) {
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

int main(int argc, char **argv) {
	if (argc != 9) {
		fprintf(stderr, "usage: patterns NAME SIZE STRIDE N PASSES DIM BLOCK PHASE\n");
		return 2;
	}
	const char *name = argv[1];
	uint64_t size = strtoull(argv[2], 0, 10), stride = strtoull(argv[3], 0, 10);
	uint64_t n = strtoull(argv[4], 0, 10), passes = strtoull(argv[5], 0, 10);
	uint64_t dim = strtoull(argv[6], 0, 10), block = strtoull(argv[7], 0, 10);
	int phase = atoi(argv[8]);
	uint64_t bytes = size;
	if (strncmp(name, "transpose", 9) == 0)
		bytes = 2 * dim * dim * 8;
	uint64_t align = 2 << 20;
	char *m = mmap(0, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	volatile uint64_t *p = (uint64_t *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1));
	uint64_t words = size / 8, sum = 0;

	if (strcmp(name, "chase") == 0) {
		uint64_t lines = size / 64;
		unsigned k = __builtin_ctzll(lines);
		for (uint64_t i = 0; i < lines; i++)
			p[scramble(i, k) * 8] = scramble((i + 1) & (lines - 1), k);
		if (phase) {
			uint64_t cur = scramble(0, k);
			for (uint64_t s = 0; s < n; s++)
				cur = p[cur * 8];
			sum = cur;
		}
	} else if (!phase) {
		/* no setup */
	} else if (strcmp(name, "sequential") == 0) {
		for (uint64_t pass = 0; pass < passes; pass++)
			for (uint64_t i = 0; i < words; i++)
				sum += p[i];
	} else if (strcmp(name, "strided") == 0) {
		for (uint64_t pass = 0; pass < passes; pass++)
			for (uint64_t off = 0; off < size; off += stride)
				sum += p[off / 8];
	} else if (strcmp(name, "random") == 0) {
		uint64_t x = 1;
		for (uint64_t i = 0; i < n; i++) {
			x = lcg(x);
			sum += p[(x >> 33) % words];
		}
	} else if (strcmp(name, "hashprobe") == 0) {
		uint64_t mask = size / 16 - 1;
		for (uint64_t k = 0; k < n; k++)
			sum += p[2 * (mix64(k) & mask)];
	} else if (strncmp(name, "transpose", 9) == 0) {
		volatile uint64_t *a = p, *b = p + dim * dim;
		uint64_t blk = strcmp(name, "transpose-blocked") == 0 ? block : dim;
		for (uint64_t ii = 0; ii < dim; ii += blk)
			for (uint64_t jj = 0; jj < dim; jj += blk)
				for (uint64_t i = ii; i < ii + blk && i < dim; i++)
					for (uint64_t j = jj; j < jj + blk && j < dim; j++)
						b[j * dim + i] = a[i * dim + j];
	} else {
		fprintf(stderr, "unknown pattern %s\n", name);
		return 2;
	}
	fprintf(stderr, "sum %llu\n", (unsigned long long)sum);
	return 0;
}
