/* Times a gradient lane emitted as C (`Equation::to_c_source`, function `grad`) over the
 * points `kernel_profile <model> emit-c 1 <dir>` wrote, after checking its answers
 * against the interpreter's bit for bit. Used by compare/c_tier.sh.
 *
 * driver <symbols> <calls>   (run in the directory holding points.bin and grads.bin)
 * prints: "<mismatched points> <points> <ns a point>" */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void grad(const double *x, const double *seeds, double *out);

static double *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f || fseek(f, 0, SEEK_END) != 0) { perror(path); exit(2); }
  long size = ftell(f);
  if (size <= 0 || size % 8 != 0 || fseek(f, 0, SEEK_SET) != 0) { fprintf(stderr, "%s: bad size\n", path); exit(2); }
  double *d = malloc((size_t)size);
  if (!d || fread(d, 1, (size_t)size, f) != (size_t)size) { perror(path); exit(2); }
  fclose(f);
  *len = (size_t)size / 8;
  return d;
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: driver <symbols> <calls>\n"); return 2; }
  size_t n = (size_t)atol(argv[1]);
  long calls = atol(argv[2]);
  size_t np, ng;
  double *points = slurp("points.bin", &np), *grads = slurp("grads.bin", &ng);
  if (n == 0 || np % n != 0 || ng != np || calls <= 0) { fprintf(stderr, "sizes disagree\n"); return 2; }
  size_t count = np / n;
  double *out = malloc(n * sizeof(double));
  if (!out) return 2;
  long bad = 0;
  for (size_t k = 0; k < count; k++) {
    grad(points + k * n, NULL, out);
    bad += memcmp(out, grads + k * n, n * sizeof(double)) != 0;
  }
  struct timespec a, b;
  double sum = 0;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long k = 0; k < calls; k++) {
    grad(points + (size_t)(k % (long)count) * n, NULL, out);
    sum += out[0];
    __asm__ volatile("" ::: "memory");
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)calls;
  printf("%ld %zu %.2f\n", bad, count, ns);
  fprintf(stderr, "sum %g\n", sum);
  return 0;
}
