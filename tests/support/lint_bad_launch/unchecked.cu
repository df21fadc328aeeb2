// A launch whose failure nothing reports: tools/lint_kernel_launches.py must reject this file.
__global__ void k(int* x) { *x = 1; }
void run(int* x) {
  k<<<1, 1>>>(x);
  int unrelated = 0;
  (void)unrelated;
}
